"""``XLandSuite``: picks the ruleset pool of a task and split, and wraps the batch in ``AMAGOEnv``."""

from __future__ import annotations

from functools import cached_property

from amago_core.config.task_split import TaskSet, TaskSplits
from amago_core.rollout.env import AMAGOEnv
from amago_core.suggest import did_you_mean
from amago_envs.suites.suite import BuiltinSuite, check_split
from amago_envs.suites.xland.rulesets import Rulesets, generate_rulesets, load_benchmark_rulesets
from amago_envs.suites.xland.specs import LOCAL_LEVELS, XLAND_DEFAULT_TASK, XLandConfig


class XLandSuite(BuiltinSuite):
    """The ``xland`` env suite: ``xland-local-small`` (default), other ``local-*`` levels, or a benchmark.

    The train split draws rulesets from ``train_fraction`` of the pool, val and test from the rest, so test
    rulesets are never trained on.
    """

    config_type = XLandConfig
    config: XLandConfig

    @property
    def default_task(self) -> str:
        """local-small: one rule between the placed objects and the goal, generated offline."""
        return XLAND_DEFAULT_TASK

    @property
    def env_name(self) -> str:
        """``XLand-<task>-R<rooms>-<size>x<size>``."""
        size = self.config.grid_size
        return f"XLand-{self.task}-R{self.config.rooms}-{size}x{size}"

    @property
    def xminigrid_id(self) -> str:
        """The xminigrid environment id of the chosen layout."""
        size = self.config.grid_size
        return f"XLand-MiniGrid-R{self.config.rooms}-{size}x{size}"

    @cached_property
    def _splits(self) -> tuple[Rulesets, Rulesets]:
        cfg = self.config
        if self.task in LOCAL_LEVELS:
            depth, distractors = LOCAL_LEVELS[self.task]
            pool = generate_rulesets(cfg.num_rulesets, depth, distractors, seed=cfg.ruleset_seed)
        else:
            pool = load_benchmark_rulesets(self.required_task)
        return pool.split(cfg.train_fraction, seed=cfg.ruleset_seed)

    def task_splits(self) -> TaskSplits:
        """Train: the ``train_fraction`` part of the ruleset pool; val, test and unseen: the held-out rest."""
        cfg = self.config
        order = f"shuffled with ruleset_seed={cfg.ruleset_seed}"
        if self.task in LOCAL_LEVELS:
            total = cfg.num_rulesets
            # The cut Rulesets.split makes, computed without generating the pool.
            cut = min(max(int(total * cfg.train_fraction), 1), total - 1)
            train = TaskSet(
                f"rulesets 0..{cut - 1} of {total} generated ({order})", kind="rulesets", first=0, count=cut
            )
            held_out = TaskSet(
                f"rulesets {cut}..{total - 1} of {total} generated ({order}; held out)",
                kind="rulesets",
                first=cut,
                count=total - cut,
                held_out=True,
            )
        else:
            share = f"{cfg.train_fraction:g}"
            train = TaskSet(f"the first {share} of benchmark {self.task} ({order})", kind="rulesets", first=0)
            held_out = TaskSet(
                f"the rest of benchmark {self.task} after the first {share} ({order}; held out)",
                kind="rulesets",
                held_out=True,
            )
        return TaskSplits(
            suite=cfg.kind, splits={"train": train, "val": held_out, "test": held_out}, unseen=held_out
        )

    def rulesets(self, split: str) -> Rulesets:
        """The ruleset pool of ``split`` (train: the train part; val and test: the held-out part).

        Raises:
            BenchmarkUnavailableError: a benchmark task whose file is not on disk.
        """
        train, held_out = self._splits
        return train if split == "train" else held_out

    def make_gym_env(self, split: str = "train"):
        """The batched XLand env of ``split`` (numpy in and out), before the AMAGOEnv wrap."""
        from xminigrid import registered_environments

        from amago_envs.suites.xland.vector_env import XLandVectorEnv

        if self.xminigrid_id not in registered_environments():
            known = [e for e in registered_environments() if e.startswith("XLand-MiniGrid")]
            msg = (
                f"xminigrid has no layout {self.xminigrid_id!r} (rooms={self.config.rooms}, grid_size="
                f"{self.config.grid_size}).{did_you_mean(self.xminigrid_id, known)} Layouts: {', '.join(known)}."
            )
            raise ValueError(msg)
        cfg = self.config
        return XLandVectorEnv(
            self.xminigrid_id,
            self.rulesets(split),
            num_envs=cfg.num_envs,
            k_episodes=cfg.k_episodes,
            view_size=cfg.view_size,
            max_steps=cfg.max_steps,
            seed=cfg.seed,
            env_name=self.env_name,
            pool_capacity=max(len(part) for part in self._splits),
        )

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """The batch of ``split`` wrapped in ``AMAGOEnv(batched_envs=num_envs)``.

        Raises:
            ValueError: unknown split or layout; BenchmarkUnavailableError (a ValueError) for a missing benchmark.
        """
        check_split(split)
        return AMAGOEnv(self.make_gym_env(split), env_name=self.env_name, batched_envs=self.config.num_envs)
