"""Train/test task separation of the built-in suites: Meta-Frozen-Lake's ``train_tasks`` pool and held-out lakes,
its unchanged default, and what each suite says its splits draw."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from pydantic import ValidationError

from amago_core.config.task_split import (
    SPLIT_NAMES,
    DescribesTasks,
    TaskSet,
    TaskSplits,
    UnseenTasksError,
    suite_task_splits,
)
from amago_envs.suites.babyai.specs import BabyAIConfig
from amago_envs.suites.babyai.suite import BabyAISuite
from amago_envs.suites.frozen_lake import FrozenLakeSuite, MetaFrozenLake, lake_of_seed, pool_tasks
from amago_envs.suites.metaworld.specs import MetaworldConfig
from amago_envs.suites.metaworld.suite import MetaworldSuite
from amago_envs.suites.procgen.specs import ProcgenConfig
from amago_envs.suites.procgen.suite import ProcgenSuite
from amago_envs.suites.specs import FrozenLakeConfig
from amago_envs.suites.tmaze import TMazeSuite
from amago_envs.suites.xland.specs import XLandConfig
from amago_envs.suites.xland.suite import XLandSuite

# sha256 of a fixed-seed rollout (below) recorded from the code before train_tasks existed: the default
# (train_tasks=None) must keep drawing the very same lakes, swaps, slips and noise, step for step.
DEFAULT_DIGEST = "524b3d7f639fd08ba91067c88ceb3078913f5f2191e5e74047d19d52f9576903"
HARD_SLIPPY_DIGEST = "1d71cc57ab857895b3e4be2365c27363b2c628586905eb57ee601c2616dd033d"
HARD_SLIPPY = {"hard_mode": True, "slip_chance": 0.1, "k_episodes": 3, "size": 4}


def rollout_digest(env: MetaFrozenLake, steps: int = 300) -> str:
    """Observations, rewards and lakes of ``steps`` random actions (fixed seeds), hashed."""
    digest = hashlib.sha256()
    actions = np.random.default_rng(123)
    obs, _ = env.reset(seed=7)
    digest.update(obs.tobytes())
    digest.update(env.lake.tobytes())
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(int(actions.integers(5)))
        digest.update(obs.tobytes())
        digest.update(np.float32(reward).tobytes())
        if terminated or truncated:
            obs, _ = env.reset()
            digest.update(obs.tobytes())
            digest.update(env.lake.tobytes())
    return digest.hexdigest()


def task_key(env: MetaFrozenLake) -> tuple[bytes, bool]:
    """The current task as ``pool_tasks`` keys it: the lake and whether actions 1 and 3 swapped."""
    return env.lake.tobytes(), env.moves[1] != (1, 0)


@pytest.mark.parametrize("split", SPLIT_NAMES)
@pytest.mark.parametrize(
    ("options", "expected"),
    [({}, DEFAULT_DIGEST), (HARD_SLIPPY, HARD_SLIPPY_DIGEST)],
    ids=["default", "hard"],
)
def test_default_lakes_are_unchanged(split, options, expected):
    env = FrozenLakeSuite(FrozenLakeConfig(**options)).make_env(split).env
    assert env.train_tasks is None
    assert rollout_digest(env) == expected


@pytest.mark.parametrize("split", ["train", "val"])
@pytest.mark.parametrize("hard_mode", [False, True])
def test_train_and_val_lakes_come_from_the_pool(split, hard_mode):
    pool = 12
    suite = FrozenLakeSuite(FrozenLakeConfig(size=4, hard_mode=hard_mode, train_tasks=pool))
    env = suite.make_env(split).env
    env.reset(seed=0)
    allowed = pool_tasks(4, hard_mode, pool)
    seeds = set()
    for _ in range(200):
        env.reset()
        assert env.task_seed is not None
        assert 0 <= env.task_seed < pool
        lake, swap = lake_of_seed(4, env.task_seed, hard_mode)
        assert np.array_equal(env.lake, lake)
        assert task_key(env) == (lake.tobytes(), swap)
        assert task_key(env) in allowed
        seeds.add(env.task_seed)
    assert seeds == set(range(pool))  # 200 draws of 12: every pool lake shows up


def test_a_lake_seed_is_always_the_same_task():
    first, swap = lake_of_seed(5, 41, hard_mode=True)
    again, swap_again = lake_of_seed(5, 41, hard_mode=True)
    assert np.array_equal(first, again)
    assert swap == swap_again
    assert not np.array_equal(lake_of_seed(5, 41)[0], lake_of_seed(5, 42)[0])


@pytest.mark.parametrize("make", ["unseen", "test"])
def test_held_out_lakes_are_never_pool_lakes(make):
    # 3x3 lakes repeat often: many seeds above the pool give a pool lake, so a check by seed alone would fail.
    size, pool = 3, 30
    taken = pool_tasks(size, True, pool)
    repeats = sum(
        (lake.tobytes(), swap) in taken
        for lake, swap in (lake_of_seed(size, seed, True) for seed in range(pool, pool + 300))
    )
    assert repeats > 0
    suite = FrozenLakeSuite(FrozenLakeConfig(size=size, hard_mode=True, train_tasks=pool))
    env = (suite.make_unseen_env() if make == "unseen" else suite.make_env("test")).env
    env.reset(seed=1)
    for _ in range(300):
        env.reset()
        assert env.task_seed is not None
        assert env.task_seed >= pool
        assert task_key(env) not in taken


def test_a_pool_of_every_lake_leaves_none_to_hold_out():
    env = FrozenLakeSuite(FrozenLakeConfig(size=2, train_tasks=200)).make_unseen_env().env
    with pytest.raises(ValueError, match="Lower train_tasks or raise size"):
        env.reset(seed=0)


def test_pool_settings_are_checked():
    for bad in (0, 100_001):
        with pytest.raises(ValidationError):
            FrozenLakeConfig(train_tasks=bad)
    with pytest.raises(ValueError, match="set train_tasks"):
        MetaFrozenLake(held_out=True)


def test_frozen_lake_describes_its_splits():
    fresh = FrozenLakeSuite().task_splits()
    assert not fresh.can_tell
    assert {fresh.splits[s].kind for s in SPLIT_NAMES} == {"fresh"}
    with pytest.raises(UnseenTasksError, match=r"'frozen_lake'.*set env\.train_tasks"):
        FrozenLakeSuite().make_unseen_env()

    pooled = FrozenLakeSuite(FrozenLakeConfig(train_tasks=200)).task_splits()
    assert pooled.can_tell
    assert pooled.splits["train"] == pooled.splits["val"]
    assert pooled.splits["train"].to_json() == {
        "description": "lake seeds 0..199 (the training pool)",
        "kind": "seeds",
        "first": 0,
        "count": 200,
        "names": None,
        "held_out": False,
    }
    assert pooled.splits["test"] == pooled.unseen
    assert pooled.unseen is not None
    assert pooled.unseen.held_out
    assert pooled.unseen.first == 200


@pytest.mark.parametrize(
    ("suite", "train", "held_out"),
    [
        (XLandSuite(XLandConfig(num_rulesets=10, train_fraction=0.8)), (0, 8), (8, 2)),
        (ProcgenSuite(ProcgenConfig(train_seeds=99)), (0, 100), (100, 10_000_000 - 99)),
        (BabyAISuite(BabyAIConfig(train_seeds=50)), (0, 50), (50, 1_000_000 - 50)),
    ],
    ids=["xland", "procgen", "babyai"],
)
def test_suites_with_held_out_ranges(suite, train, held_out):
    splits = suite.task_splits()
    assert isinstance(suite, DescribesTasks)
    assert splits.can_tell
    assert (splits.splits["train"].first, splits.splits["train"].count) == train
    assert not splits.splits["train"].held_out
    for name in ("val", "test"):
        assert splits.splits[name] == splits.unseen
    assert splits.unseen is not None
    assert (splits.unseen.first, splits.unseen.count) == held_out


def test_xland_ranges_match_its_ruleset_split():
    suite = XLandSuite(XLandConfig(task="local-trivial", num_rulesets=10, train_fraction=0.8))
    splits = suite.task_splits()
    assert len(suite.rulesets("train")) == splits.splits["train"].count
    assert len(suite.rulesets("test")) == splits.splits["test"].count


@pytest.mark.parametrize(
    ("task", "seed", "can_tell"),
    [("ml45", 0, True), ("ml1-reach-v3", 0, True), ("ml1-reach-v3", None, False), ("mt10", 0, False)],
)
def test_metaworld_holds_out_only_ml_test_tasks(task, seed, can_tell):
    splits = MetaworldSuite(MetaworldConfig(task=task, benchmark_seed=seed)).task_splits()
    assert splits.can_tell is can_tell
    assert splits.splits["train"] == splits.splits["val"]
    if can_tell:
        assert splits.splits["test"].held_out
    else:
        assert splits.hold_out_hint
        assert "cannot make unseen" in splits.cannot_tell_message()


def test_a_suite_without_held_out_tasks_says_what_to_do():
    splits = TMazeSuite().task_splits()
    assert not splits.can_tell
    assert splits.suite == "tmaze"
    with pytest.raises(UnseenTasksError, match="'tmaze' cannot make unseen"):
        TMazeSuite().make_unseen_env()
    with pytest.raises(UnseenTasksError):
        splits.tasks("unseen")
    assert splits.tasks("val") == splits.splits["val"]


def test_a_suite_that_does_not_describe_its_tasks():
    class Plain:
        def make_env(self, split):
            raise NotImplementedError

    splits = suite_task_splits(Plain())
    assert splits.suite == "Plain"
    assert not splits.can_tell
    assert {splits.splits[s].kind for s in SPLIT_NAMES} == {"unknown"}


def test_task_splits_need_every_split():
    with pytest.raises(ValueError, match="misses the split"):
        TaskSplits(suite="x", splits={"train": TaskSet("all")})
