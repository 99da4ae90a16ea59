"""Train/test task separation: which tasks each split of a run draws, and whether its suite holds tasks out.

An env suite says so with :meth:`DescribesTasks.task_splits` (a sentence and a machine-readable form per split),
and one that can make tasks no training env ever draws ("unseen" tasks) builds them with
:meth:`DescribesTasks.make_unseen_env`. A run records its suite's description in ``task_split.json``
(:func:`write_task_split`, read back by :func:`task_split_of`); ``amago eval --tasks`` picks the tasks to score on.

torch-free and gymnasium-free: ``amago compare`` and ``amago eval`` read it before anything heavy is imported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from amago_core.io import atomic_write_json

TASK_SPLIT_FILE = "task_split.json"
"""The run folder's record of the tasks each split drew (written when the run starts)."""

TASK_SPLIT_FORMAT = 1
"""Version of the ``task_split.json`` layout; bumped when a key changes meaning."""

SPLIT_NAMES: tuple[str, ...] = ("train", "val", "test")
"""The splits a run asks its suite for."""

TaskChoice = Literal["test", "val", "train", "unseen"]
"""What ``amago eval --tasks`` scores on: one of the run's splits, or held-out tasks no training env draws."""

TASK_CHOICES: tuple[str, ...] = ("test", "val", "train", "unseen")
"""The values of ``amago eval --tasks``, the default (``test``, what ``amago eval`` always used) first."""

TaskKind = Literal["same", "fresh", "seeds", "levels", "rulesets", "tasks", "unknown"]
"""How a split's tasks are named: ``same`` every split draws from one distribution (nothing is held out);
``fresh`` a new random task per reset; ``seeds`` / ``levels`` a range of task or level seeds; ``rulesets`` a
range of indices into the suite's ruleset pool; ``tasks`` named tasks; ``unknown`` the suite does not say."""


class UnseenTasksError(ValueError):
    """The suite cannot make held-out ("unseen") tasks; the message says what to set to hold tasks out."""


@dataclass(frozen=True)
class TaskSet:
    """The tasks one split draws.

    Attributes:
        description: one line for people (``"lake seeds 0..199 (the training pool)"``).
        kind: how the tasks are named (see :data:`TaskKind`).
        first: the first seed, level or index of a ``seeds`` / ``levels`` / ``rulesets`` range.
        count: how many there are from ``first`` on; None: no upper end.
        names: the named tasks of a ``tasks`` set (None: not named, or too many to list).
        held_out: True when no training env ever draws these tasks.
    """

    description: str
    kind: TaskKind = "same"
    first: int | None = None
    count: int | None = None
    names: tuple[str, ...] | None = None
    held_out: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON form (every key present, None where it does not apply)."""
        return {**asdict(self), "names": list(self.names) if self.names is not None else None}


@dataclass(frozen=True)
class TaskSplits:
    """What each split of a suite draws, and the held-out tasks it can make.

    Attributes:
        suite: the suite's registered name (``frozen_lake``).
        splits: the :class:`TaskSet` of ``train``, ``val`` and ``test``.
        unseen: the held-out tasks ``amago eval --tasks unseen`` scores on; None: the suite cannot make any.
        hold_out_hint: for a suite without ``unseen``, what to do to get held-out tasks (a sentence ending in a
            period), e.g. ``"set env.train_tasks to hold lakes out."``.
    """

    suite: str
    splits: Mapping[str, TaskSet]
    unseen: TaskSet | None = None
    hold_out_hint: str | None = None

    def __post_init__(self) -> None:
        missing = [name for name in SPLIT_NAMES if name not in self.splits]
        if missing:
            msg = f"TaskSplits of {self.suite!r} misses the split(s) {', '.join(missing)}; describe train, val and test."
            raise ValueError(msg)

    @property
    def can_tell(self) -> bool:
        """Whether the suite can make held-out tasks (``amago eval --tasks unseen``)."""
        return self.unseen is not None

    def cannot_tell_message(self) -> str:
        """The one line ``amago eval --tasks unseen`` fails with for a suite without held-out tasks."""
        hint = self.hold_out_hint or "this suite draws every split from one task distribution."
        return f"env suite {self.suite!r} cannot make unseen (held-out) tasks: {hint}"

    def tasks(self, choice: str) -> TaskSet:
        """The :class:`TaskSet` of a ``--tasks`` choice (``train``, ``val``, ``test`` or ``unseen``).

        Raises:
            UnseenTasksError: ``unseen`` for a suite that cannot make held-out tasks.
            ValueError: an unknown choice.
        """
        if choice == "unseen":
            if self.unseen is None:
                raise UnseenTasksError(self.cannot_tell_message())
            return self.unseen
        if choice not in self.splits:
            msg = f"unknown tasks {choice!r}; use one of {', '.join(TASK_CHOICES)}."
            raise ValueError(msg)
        return self.splits[choice]

    def to_json(self) -> dict[str, Any]:
        """The JSON form written into ``task_split.json`` (see :func:`task_split_record`)."""
        return {
            "suite": self.suite,
            "can_tell": self.can_tell,
            "splits": {name: self.splits[name].to_json() for name in SPLIT_NAMES},
            "unseen": self.unseen.to_json() if self.unseen is not None else None,
            "hold_out_hint": self.hold_out_hint,
        }


@runtime_checkable
class DescribesTasks(Protocol):
    """An env suite that says which tasks each split draws (every built-in suite does).

    ``make_unseen_env`` builds one env (already an ``AMAGOEnv``) on held-out tasks, and raises
    :class:`UnseenTasksError` when ``task_splits().unseen`` is None.
    """

    def task_splits(self) -> TaskSplits:
        """What the train, val and test splits draw, and the held-out tasks (if any)."""
        ...

    def make_unseen_env(self) -> Any:
        """One env on held-out tasks.

        Raises:
            UnseenTasksError: the suite cannot make held-out tasks.
        """
        ...


def suite_task_splits(suite: Any) -> TaskSplits:
    """``suite.task_splits()``, or an ``unknown`` description for a suite that does not describe its tasks."""
    describe = getattr(suite, "task_splits", None)
    if callable(describe):
        splits = describe()
        if isinstance(splits, TaskSplits):
            return splits
    name = getattr(getattr(suite, "config", None), "kind", None) or type(suite).__name__
    unknown = TaskSet("not described by the suite", kind="unknown")
    return TaskSplits(
        suite=str(name),
        splits=dict.fromkeys(SPLIT_NAMES, unknown),
        hold_out_hint="the suite does not describe its tasks (it has no task_splits()); it cannot hold tasks out.",
    )


@dataclass(frozen=True)
class UnseenEnvMaker:
    """A picklable env maker of held-out tasks (``suite.make_unseen_env()``), for ``amago eval --tasks unseen``.

    Attributes:
        suite: a :class:`DescribesTasks` suite whose ``task_splits().unseen`` is set.
    """

    suite: Any

    def __call__(self) -> Any:
        return self.suite.make_unseen_env()


def task_split_record(splits: TaskSplits, env_name: str | None = None) -> dict[str, Any]:
    """The ``task_split.json`` of a run: ``{"format": 1, "env_name": ..., **splits.to_json()}``, where
    ``env_name`` is the suite's (``MetaFrozenLake-k10-5x5-easy-reset``), None when it has none."""
    return {"format": TASK_SPLIT_FORMAT, "env_name": env_name, **splits.to_json()}


def suite_of_makers(makers: Iterable[Any]) -> Any | None:
    """The env suite behind a run's train/val/test makers (the first that names one), None for Python makers."""
    return next((maker.suite for maker in makers if getattr(maker, "suite", None) is not None), None)


def write_task_split(run_root: Path, makers: Iterable[Any]) -> bool:
    """Writes ``run_root/task_split.json`` from the suite behind ``makers``; returns whether it wrote one.

    The file is written atomically inside ``run_root``. Runs whose envs come from Python makers (no suite) get
    no record: their tasks are the script's business.
    """
    suite = suite_of_makers(makers)
    if suite is None:
        return False
    env_name = getattr(suite, "env_name", None)
    record = task_split_record(suite_task_splits(suite), env_name if isinstance(env_name, str) else None)
    atomic_write_json(run_root / TASK_SPLIT_FILE, record, root=run_root)
    return True


def task_split_of(run_dir: Path) -> dict[str, Any] | None:
    """The task separation a run recorded when it started (``run_dir/task_split.json``), as plain JSON.

    The record (format 1) is::

        {"format": 1, "suite": "frozen_lake", "env_name": "MetaFrozenLake-k10-5x5-easy-reset",
         "can_tell": true,
         "splits": {"train": TASKS, "val": TASKS, "test": TASKS},
         "unseen": TASKS or null,
         "hold_out_hint": null or "set env.train_tasks to hold lakes out."}

    where each ``TASKS`` is ``{"description": "lake seeds 0..199 (the training pool)", "kind": "seeds",
    "first": 0, "count": 200, "names": null, "held_out": false}`` (see :class:`TaskSet`). ``can_tell`` is
    whether the suite can make held-out tasks; ``splits[s]["held_out"]`` whether split ``s`` never shares a task
    with training (e.g. to label a compare plot of ``val/`` or ``test/`` records "held-out tasks").

    Returns:
        The record, or None when the run has none (runs from before the record existed, runs whose envs came
        from Python makers) or it cannot be read as a JSON object with ``splits`` (a damaged file is no reason to
        fail a plot). Never unpickles anything.
    """
    path = Path(run_dir) / TASK_SPLIT_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("splits"), dict) else None


__all__ = [
    "SPLIT_NAMES",
    "TASK_CHOICES",
    "TASK_SPLIT_FILE",
    "TASK_SPLIT_FORMAT",
    "DescribesTasks",
    "TaskChoice",
    "TaskKind",
    "TaskSet",
    "TaskSplits",
    "UnseenEnvMaker",
    "UnseenTasksError",
    "suite_of_makers",
    "suite_task_splits",
    "task_split_of",
    "task_split_record",
    "write_task_split",
]
