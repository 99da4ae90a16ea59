"""``BuiltinSuite``: what every built-in env suite shares (the split check and the ``AMAGOEnv`` wrap)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from amago_core.config.task_split import SPLIT_NAMES, TaskSet, TaskSplits, UnseenTasksError
from amago_core.rollout.env import AMAGOEnv
from amago_core.suggest import did_you_mean

if TYPE_CHECKING:
    import gymnasium

    from amago_core.config.component import EnvSuiteConfig

SPLITS: tuple[str, ...] = ("train", "val", "test")
"""The data splits an experiment asks a suite for."""


def check_split(split: str) -> None:
    """Raises ValueError (with a did-you-mean) when ``split`` is not ``train``, ``val`` or ``test``."""
    if split not in SPLITS:
        msg = f"unknown split {split!r}.{did_you_mean(split, SPLITS)} Use one of: {', '.join(SPLITS)}."
        raise ValueError(msg)


class BuiltinSuite(ABC):
    """A configured env suite: makes fresh environments of one task for an experiment.

    Most built-in suites generate a new random task (lake, maze, room, goal side) on every ``reset``, so
    the train, val and test splits draw from the same distribution; the split is still checked so that
    a typo fails here rather than silently training on the wrong data. Suites that separate tasks (xland,
    metaworld, procgen, babyai, Meta-Frozen-Lake with ``train_tasks``) say so in :meth:`task_splits` and
    build held-out envs with :meth:`make_unseen_env`.

    Attributes:
        config: the validated suite config.
    """

    config_type: ClassVar[type[EnvSuiteConfig]]
    """The config class this suite takes; an instance of it built with defaults is used when none is given."""

    def __init__(self, config: EnvSuiteConfig | None = None):
        if config is None:
            config = self.config_type.model_validate({})  # every suite config gives kind its default
        if not isinstance(config, self.config_type):
            msg = (
                f"{type(self).__name__} takes a {self.config_type.__name__}, got a {type(config).__name__}; "
                f"build it with {self.config_type.__name__}(...) or through the env suite registry."
            )
            raise TypeError(msg)
        self.config = config

    @property
    def task(self) -> str | None:
        """The task being made: the config's task, or the suite's default when the config names none."""
        return self.config.task if self.config.task is not None else self.default_task

    @property
    def required_task(self) -> str:
        """:attr:`task` for suites that cannot make an env without one (those with a default task).

        Raises:
            ValueError: neither the config nor the suite's default names a task.
        """
        task = self.task
        if task is None:
            msg = f"{type(self).__name__}: no task given and the suite has no default one; name a task in the env id."
            raise ValueError(msg)
        return task

    @property
    def default_task(self) -> str | None:
        """The task used when the env id names none (None for suites without tasks)."""
        return None

    @property
    @abstractmethod
    def env_name(self) -> str:
        """Name for logs and trajectory file names (no ``/`` and no ``_``: file names split on them)."""

    @abstractmethod
    def make_gym_env(self) -> gymnasium.Env[Any, Any]:
        """Builds the raw gymnasium environment (no amago wrappers)."""

    def make_env(self, split: str = "train") -> Any:
        """Builds one environment for ``split`` wrapped in ``AMAGOEnv``.

        Args:
            split: ``"train"``, ``"val"`` or ``"test"``.

        Raises:
            ValueError: ``split`` is not one of the three.
        """
        check_split(split)
        return AMAGOEnv(self.make_gym_env(), env_name=self.env_name)

    def task_splits(self) -> TaskSplits:
        """What each split draws; by default every split draws from the one distribution (nothing held out)."""
        same = TaskSet("the suite's whole task distribution (every split draws from it)", kind="same")
        return TaskSplits(
            suite=self.config.kind,
            splits=dict.fromkeys(SPLIT_NAMES, same),
            hold_out_hint=f"{type(self).__name__} draws every split from one task distribution and has no option to "
            "hold tasks out; evaluate with --tasks test (or val).",
        )

    def make_unseen_env(self) -> Any:
        """One env on held-out tasks: the ``test`` split's env when :meth:`task_splits` says it is held out.

        Raises:
            UnseenTasksError: the suite cannot make held-out tasks (the message says what to set instead).
        """
        splits = self.task_splits()
        if splits.unseen is None:
            raise UnseenTasksError(splits.cannot_tell_message())
        return self.make_env("test")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env_name={self.env_name!r})"
