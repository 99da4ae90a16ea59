"""``BabyAISuite``: the ``babyai`` env suite (``babyai-multitask`` and one id per BabyAI level)."""

from __future__ import annotations

import numpy as np

from amago_core.config.task_split import TaskSet, TaskSplits
from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.babyai.env import MultitaskBabyAI
from amago_envs.suites.babyai.specs import MULTITASK, MULTITASK_LEVELS, BabyAIConfig
from amago_envs.suites.suite import BuiltinSuite, check_split

SEED_LIMIT = 1_000_000
"""Layout seeds run up to this; the train split takes the first ``train_seeds`` of them."""


class BabyAISuite(BuiltinSuite):
    """Multi-task BabyAI; train and val/test differ in layouts (and, for ``multitask``, in levels)."""

    config_type = BabyAIConfig
    config: BabyAIConfig

    @property
    def default_task(self) -> str:
        """``multitask``: AMAGO-2's random level per episode."""
        return MULTITASK

    @property
    def env_name(self) -> str:
        """``babyai-<task>``; the envs themselves are named per level (``babyai-GoToLocal``)."""
        return f"babyai-{self.task}"

    def levels(self, split: str) -> tuple[str, ...]:
        """Levels ``split`` draws from: a seeded pick of ``train_levels`` for multitask training, else all."""
        if self.task != MULTITASK:
            return (self.required_task,)
        count = self.config.train_levels
        if split != "train" or count is None or count >= len(MULTITASK_LEVELS):
            return MULTITASK_LEVELS
        picked = np.random.default_rng(self.config.level_pick_seed).choice(
            len(MULTITASK_LEVELS), count, replace=False
        )
        return tuple(MULTITASK_LEVELS[i] for i in sorted(picked))

    def seed_range(self, split: str) -> tuple[int, int]:
        """Layout seeds of ``split``: ``[0, train_seeds)`` for train, the rest for val and test."""
        if self.config.train_seeds >= SEED_LIMIT:
            msg = f"train_seeds={self.config.train_seeds} leaves no layouts for val/test; use < {SEED_LIMIT}."
            raise ValueError(msg)
        return (0, self.config.train_seeds) if split == "train" else (self.config.train_seeds, SEED_LIMIT)

    def task_splits(self) -> TaskSplits:
        """Train: layout seeds ``[0, train_seeds)`` (and, for multitask, ``train_levels`` levels); val, test and
        unseen: the layout seeds above them on every level."""
        train_low, train_high = self.seed_range("train")
        low, high = self.seed_range("test")
        train_levels = self.levels("train")
        levels = "" if train_levels == self.levels("test") else f" of {len(train_levels)} picked levels"
        train = TaskSet(
            f"layout seeds {train_low}..{train_high - 1}{levels}",
            kind="seeds",
            first=train_low,
            count=train_high - train_low,
            names=train_levels,
        )
        held_out = TaskSet(
            f"layout seeds {low}..{high - 1} (held out)",
            kind="seeds",
            first=low,
            count=high - low,
            names=self.levels("test"),
            held_out=True,
        )
        return TaskSplits(
            suite=self.config.kind,
            splits={"train": train, "val": held_out, "test": held_out},
            unseen=held_out,
        )

    def make_gym_env(self, split: str = "train") -> MultitaskBabyAI:
        """The meta-RL env for ``split`` (levels and layout seeds depend on it)."""
        return MultitaskBabyAI(
            self.levels(split),
            k_episodes=self.config.k_episodes,
            seed_range=self.seed_range(split),
            obs_kind=self.config.obs_kind,
            mission_tokens=self.config.mission_tokens,
            full_grid_size=self.config.full_grid_size,
        )

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """The env for ``split``, named per level by the env itself (``env_name=None``)."""
        check_split(split)
        return AMAGOEnv(self.make_gym_env(split), env_name=None)
