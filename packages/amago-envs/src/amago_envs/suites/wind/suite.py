"""``WindSuite``: the ``wind`` env suite (train and val on the train winds, test on held-out winds)."""

from __future__ import annotations

import numpy as np

from amago_core.config.task_split import TaskSet, TaskSplits
from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.suite import BuiltinSuite, check_split
from amago_envs.suites.wind.env import Wind, wind_set
from amago_envs.suites.wind.specs import WindConfig


class WindSuite(BuiltinSuite):
    """The ``wind`` env suite (env id ``wind``).

    ``train`` envs play ``k_train`` attempts per trial and ``val`` / ``test`` envs ``k_eval``. ``train`` and
    ``val`` draw winds from the ``wind_seed`` set, ``test`` (and ``amago eval --tasks unseen``) from the
    ``held_out_seed`` set, which no training env ever draws.
    """

    config_type = WindConfig
    config: WindConfig

    @property
    def env_name(self) -> str:
        """``Wind`` (``Wind-dense`` with the dense reward, whose returns are on another scale)."""
        return "Wind-dense" if self.config.dense_reward else "Wind"

    def task_splits(self) -> TaskSplits:
        """Train and val: the ``wind_seed`` winds; test and unseen: the ``held_out_seed`` winds (held out)."""
        cfg = self.config
        train = TaskSet(f"{cfg.n_tasks} winds of wind_seed={cfg.wind_seed} (the training set)", kind="tasks")
        held_out = TaskSet(
            f"{cfg.n_tasks} winds of held_out_seed={cfg.held_out_seed} (held out)",
            kind="tasks",
            held_out=True,
        )
        return TaskSplits(
            suite=cfg.kind, splits={"train": train, "val": train, "test": held_out}, unseen=held_out
        )

    def winds(self, split: str = "train") -> np.ndarray:
        """The ``(n_tasks, 2)`` winds ``split`` draws from: the held-out set for ``test``, the training set otherwise.

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        check_split(split)
        cfg = self.config
        seed = cfg.held_out_seed if split == "test" else cfg.wind_seed
        return wind_set(cfg.n_tasks, cfg.wind_max, seed)

    def make_gym_env(self, split: str = "train") -> Wind:
        """A fresh Wind of ``split``: its task set and its attempts per trial (``k_train`` or ``k_eval``).

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        cfg = self.config
        return Wind(
            winds=self.winds(split),
            k_episodes=cfg.attempts(split),
            max_episode_steps=cfg.max_episode_steps,
            goal_radius=cfg.goal_radius,
            dense_reward=cfg.dense_reward,
        )

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """One Wind of ``split`` in ``AMAGOEnv``.

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        check_split(split)
        return AMAGOEnv(self.make_gym_env(split), env_name=self.env_name)
