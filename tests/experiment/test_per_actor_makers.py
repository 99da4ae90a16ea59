"""Env suites that give each actor its own env (``actor_makers``): the makers reach every pool, in actor order.

The toy suite's env observes its actor index, so a pool's first observation shows which env each row got.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Any

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest

from amago_core.config.experiment import ExperimentConfig
from amago_core.experiment.pools import (
    SuiteEnvMaker,
    actor_share,
    build_pool,
    makers_per_actor,
    suite_makers,
)
from amago_core.rollout import AMAGOEnv
from amago_core.rollout.suite import EnvSuite, PerActorEnvSuite

# Async workers cannot import this test module by name; ship its classes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SHARED = -1
"""What the env of a suite's plain ``make_env`` observes (no actor of its own)."""


class ActorIndexEnv(gym.Env):
    """Observes ``[actor]`` for two steps, then ends."""

    def __init__(self, actor: int) -> None:
        self.actor = actor
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([self.actor], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.actor], np.float32), 0.0, self.t >= 2, False, {}


def actor_env(split: str, actor: int) -> AMAGOEnv:
    return AMAGOEnv(ActorIndexEnv(actor), env_name=f"{split}-actor{actor}")


@dataclass(frozen=True)
class PlainSuite:
    """A suite with ``make_env`` only (every third-party suite before ``actor_makers``)."""

    def make_env(self, split: str) -> AMAGOEnv:
        return actor_env(split, SHARED)


@dataclass(frozen=True)
class PinnedSuite(PlainSuite):
    """Pins actors to ``groups`` groups round-robin; records the actor counts it was asked for."""

    groups: int = 2

    def actor_makers(self, split: str, n_actors: int) -> list[Any]:
        if n_actors % self.groups:
            msg = f"{n_actors} actors do not divide among {self.groups} groups"
            raise ValueError(msg)
        return [functools.partial(actor_env, split, actor) for actor in range(n_actors)]


def first_observations(makers: list[Any], role: str, env_mode: str = "sync") -> list[int]:
    config = ExperimentConfig.model_validate(
        {"rollout": {"parallel_actors": len(makers), "env_mode": env_mode}}
    )
    pool = build_pool(config, makers, role=role, process=0)  # type: ignore[arg-type]
    try:
        return [int(x) for x in np.asarray(pool.reset().obs["observation"]).reshape(-1)]
    finally:
        pool.close()


def test_the_protocol_tells_suites_with_actor_makers_apart() -> None:
    assert isinstance(PinnedSuite(), PerActorEnvSuite)
    assert isinstance(PlainSuite(), EnvSuite)
    assert not isinstance(PlainSuite(), PerActorEnvSuite)


@pytest.mark.parametrize(("env_mode", "actors"), [("sync", 4), ("async", 2)])
def test_each_actor_of_every_role_gets_its_own_env(env_mode: str, actors: int) -> None:
    makers = suite_makers(PinnedSuite())
    for role in ("train", "val", "test"):
        per_actor = makers_per_actor(makers[role], actors, f"make_{role}_env")
        assert [m().env_name for m in per_actor] == [f"{role}-actor{i}" for i in range(actors)]
        if env_mode == "sync" or role == "train":  # one async pool shows the makers travel to workers
            assert first_observations(per_actor, role, env_mode) == list(range(actors))


def test_a_suite_without_actor_makers_builds_make_env_for_every_actor() -> None:
    maker = suite_makers(PlainSuite())["train"]
    assert first_observations(makers_per_actor(maker, 3, "make_train_env"), "train") == [SHARED] * 3
    assert maker().env_name == f"train-actor{SHARED}"


def test_a_count_the_suite_cannot_split_fails_before_any_env_is_built() -> None:
    with pytest.raises(ValueError, match="3 actors do not divide among 2 groups"):
        makers_per_actor(suite_makers(PinnedSuite())["train"], 3, "make_train_env")


def test_ray_actor_shares_keep_global_actor_indices() -> None:
    """3 Ray actors x 2 envs, 3 groups: each share is its slice of 6 actors (2 alone would not divide)."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from amago_ray.collector import actor_env_makers

    config = ExperimentConfig.model_validate({"ray": {"actors": 3, "envs_per_actor": 2}})
    maker = suite_makers(PinnedSuite(groups=3))["train"]
    seen = []
    for index in range(3):
        share = actor_env_makers(maker, config, index)
        seen.append([m().env_name for m in makers_per_actor(share, 2, "make_train_env")])
    assert seen == [[f"train-actor{2 * k}", f"train-actor{2 * k + 1}"] for k in range(3)]
    with pytest.raises(ValueError, match="2 actors do not divide among 3 groups"):
        makers_per_actor(maker, 2, "make_train_env")
    assert actor_env_makers(None, config, 0) is None


def test_python_api_makers_are_not_shared_out() -> None:
    plain = functools.partial(actor_env, "train", 7)
    assert actor_share(plain, 2, 6) is plain
    shared = actor_share(SuiteEnvMaker(PinnedSuite(), "val"), 2, 6)
    assert (shared.first_actor, shared.total_actors, shared.split) == (2, 6, "val")
    with pytest.raises(ValueError, match="split among 6 actors"):
        shared.for_actors(5)


def test_experiment_pools_get_the_suite_actor_makers(tiny_job, monkeypatch) -> None:
    """A built-in suite given ``actor_makers``: the run's train and val pools step one env per actor."""
    from amago import Experiment
    from amago_envs.suites.tmaze import TMazeSuite

    def named_tmaze(suite: TMazeSuite, split: str, actor: int) -> AMAGOEnv:
        return AMAGOEnv(suite.make_gym_env(), env_name=f"{split}-actor{actor}")

    def actor_makers(self: TMazeSuite, split: str, n_actors: int) -> list[Any]:
        return [functools.partial(named_tmaze, self, split, actor) for actor in range(n_actors)]

    monkeypatch.setattr(TMazeSuite, "actor_makers", actor_makers, raising=False)
    experiment = Experiment(ExperimentConfig.model_validate(tiny_job))
    experiment.start()
    try:
        experiment.collect_new_training_data()
        assert experiment.frames_by_env_name == {f"train-actor{i}": 8 for i in range(4)}
        _, _, stats = experiment.interact(experiment.val_envs, 2)
        assert stats["new_frames_by_env_name"] == {f"val-actor{i}": 2 for i in range(4)}
    finally:
        experiment.close()
