"""``ProcgenSuite``: the two-attempt multi-game Procgen env of one task, with per-split level ranges."""

from __future__ import annotations

from amago_core.config.task_split import TaskSet, TaskSplits
from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.procgen.specs import TASK_GAMES, TASK_HORIZONS, TASK_REWARD_SCALES, ProcgenConfig
from amago_envs.suites.procgen.two_attempt import TwoAttemptProcgen
from amago_envs.suites.suite import BuiltinSuite, check_split

MAX_LEVEL = 10_000_000


class _PerGameName(AMAGOEnv):
    """AMAGOEnv whose name follows the game drawn at the last reset (per-game metrics and file names)."""

    env: TwoAttemptProcgen  # what ProcgenSuite.make_env wraps; it names the current game

    @property
    def env_name(self) -> str:
        return f"Procgen-{self.env.env_name}"


class ProcgenSuite(BuiltinSuite):
    """The ``procgen`` env suite: ``procgen-easy`` (default), ``procgen-easy-rescaled``, ``procgen-memory-hard``."""

    config_type = ProcgenConfig
    config: ProcgenConfig

    @property
    def default_task(self) -> str:
        """easy: the five platform games of example 09."""
        return "easy"

    @property
    def env_name(self) -> str:
        """``Procgen-<task>`` (each env renames itself to ``Procgen-<game>`` per reset)."""
        return f"Procgen-{self.task}"

    def level_range(self, split: str) -> tuple[int, int]:
        """Train levels ``[0, train_seeds]``, val and test levels above them."""
        if split == "train":
            return 0, self.config.train_seeds
        return self.config.train_seeds + 1, MAX_LEVEL

    def task_splits(self) -> TaskSplits:
        """Train levels ``0..train_seeds``; val, test and unseen: the levels above them."""
        low, high = self.level_range("train")
        first, last = self.level_range("test")
        train = TaskSet(f"levels {low}..{high} (every game)", kind="levels", first=low, count=high - low + 1)
        held_out = TaskSet(
            f"levels {first}..{last} (every game; held out)",
            kind="levels",
            first=first,
            count=last - first + 1,
            held_out=True,
        )
        return TaskSplits(
            suite=self.config.kind,
            splits={"train": train, "val": held_out, "test": held_out},
            unseen=held_out,
        )

    def make_gym_env(self, split: str = "train") -> TwoAttemptProcgen:
        """The two-attempt env for ``split`` with the task's games, horizon and reward scales."""
        cfg = self.config
        task = self.required_task
        return TwoAttemptProcgen(
            games=cfg.games or TASK_GAMES[task],
            level_range=self.level_range(split),
            distribution="memory-hard" if task == "memory-hard" else "easy",
            horizon=cfg.horizon or TASK_HORIZONS[task],
            reward_scales=cfg.reward_scales
            if cfg.reward_scales is not None
            else TASK_REWARD_SCALES.get(task, {}),
        )

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """The env of ``split`` wrapped so that its name follows the current game.

        Raises:
            ValueError: ``split`` is not one of train, val, test.
        """
        check_split(split)
        return _PerGameName(self.make_gym_env(split))
