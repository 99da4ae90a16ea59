"""``MetaworldSuite``: the ``metaworld`` env suite (k-shot Meta-World, train goals for train/val, test for test)."""

from __future__ import annotations

from typing import Any

from amago_core.config.task_split import TaskSet, TaskSplits
from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.metaworld.kshot import KShotMetaworld
from amago_envs.suites.metaworld.specs import MetaworldConfig
from amago_envs.suites.suite import BuiltinSuite, check_split


class MetaworldSuite(BuiltinSuite):
    """The ``metaworld`` env suite (env ids ``metaworld-ml45``, ``metaworld-ml1-reach-v3``...).

    ``train`` and ``val`` envs draw train tasks; ``test`` envs draw the benchmark's test tasks (held-out
    environments for ML10/ML25/ML45, held-out goals for ML1, train tasks for the MT benchmarks). Train envs play
    ``k_train`` trials per meta-episode and val/test envs ``k_eval`` (both ``k_episodes`` unless set).
    """

    config_type = MetaworldConfig
    config: MetaworldConfig

    @property
    def default_task(self) -> str:
        """``ml1-reach-v3``."""
        return "ml1-reach-v3"

    @property
    def env_name(self) -> str:
        """The benchmark (``ml45``); envs name themselves by the Meta-World environment of each meta-episode."""
        return self.task or self.default_task

    def task_splits(self) -> TaskSplits:
        """Train and val: the benchmark's train tasks; test and unseen: its test tasks (ML benchmarks only)."""
        bench = self.env_name
        train = TaskSet(f"{bench} train tasks (benchmark_seed={self.config.benchmark_seed})", kind="tasks")
        if not bench.startswith("ml"):
            return TaskSplits(
                suite=self.config.kind,
                splits={"train": train, "val": train, "test": train},
                hold_out_hint=f"{bench} is a multi-task benchmark without test tasks; use an ML benchmark "
                "(metaworld-ml1-<env>, -ml10, -ml25, -ml45) to evaluate on held-out tasks.",
            )
        if bench.startswith("ml1-") and self.config.benchmark_seed is None:
            # Without a seed each process draws its train and test goals anew: nothing is kept out of training.
            test = TaskSet(f"{bench} test goals, drawn anew in each process (not held out)", kind="tasks")
            return TaskSplits(
                suite=self.config.kind,
                splits={"train": train, "val": train, "test": test},
                hold_out_hint="ML1 holds goals out only with a fixed benchmark_seed; set env.benchmark_seed.",
            )
        what = "goals" if bench.startswith("ml1-") else "environments"
        test = TaskSet(f"{bench} test tasks (held-out {what})", kind="tasks", held_out=True)
        return TaskSplits(
            suite=self.config.kind, splits={"train": train, "val": train, "test": test}, unseen=test
        )

    def make_gym_env(self, split: str = "train") -> KShotMetaworld:
        """The k-shot env on the ``train`` (train and val) or ``test`` tasks, with the split's trials per
        meta-episode (``k_train`` for train, ``k_eval`` for val and test).

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        cfg = self.config
        return KShotMetaworld(
            benchmark=self.env_name,
            split="test" if split == "test" else "train",
            k_episodes=cfg.attempts(split),
            max_episode_steps=cfg.max_episode_steps,
            benchmark_seed=cfg.benchmark_seed,
            reward_scales=cfg.reward_scales,
        )

    def make_env(self, split: str = "train") -> Any:
        """One k-shot env for ``split`` in ``AMAGOEnv``, named per meta-episode by its Meta-World environment.

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        check_split(split)
        # env_name=None: AMAGOEnv reads the env's current name, so metrics are kept per Meta-World environment.
        return AMAGOEnv(self.make_gym_env(split), env_name=None)
