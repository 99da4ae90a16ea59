"""``k_train`` / ``k_eval`` for HalfCheetahVel and Meta-World: attempts per trial by split, defaults unchanged.

The config checks need neither mujoco nor metaworld; the env checks skip where those are not installed.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from pydantic import ValidationError

os.environ.setdefault("MUJOCO_GL", "disable")  # no display; these tests never render

from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX
from amago_envs.suites.half_cheetah_vel.specs import HALF_CHEETAH_VEL, HalfCheetahVelConfig
from amago_envs.suites.metaworld.specs import METAWORLD, MetaworldConfig

SPLITS = ("train", "val", "test")
VELOCITY_METRICS = {
    "Mean Velocity",
    "Max Velocity",
    "Avg. Last 50 Timestep Velocity",
    "Target Velocity Error at Final 50 Timesteps",
}


def logged(info: dict) -> dict[str, float]:
    return {
        k.removeprefix(AMAGO_ENV_LOG_PREFIX).strip(): v
        for k, v in info.items()
        if k.startswith(AMAGO_ENV_LOG_PREFIX)
    }


def play(env, action: np.ndarray) -> list[tuple]:
    """Steps a reset gymnasium env with a fixed action until its episode ends; every step's output."""
    out = []
    while True:
        step = env.step(action)
        out.append(step)
        if step[2] or step[3]:
            return out


# ----- configs (no mujoco, no metaworld) -----


def test_half_cheetah_vel_config_defaults_to_one_attempt_everywhere() -> None:
    cfg = HalfCheetahVelConfig()
    assert [cfg.attempts(s) for s in SPLITS] == [1, 1, 1]
    assert cfg.episode_steps() == cfg.max_episode_steps == 1000
    assert HalfCheetahVelConfig.fields_missing_docs() == []


def test_half_cheetah_vel_config_splits_attempts() -> None:
    cfg = HalfCheetahVelConfig(k_train=2, k_eval=5, max_episode_steps=10)
    assert [cfg.attempts(s) for s in SPLITS] == [2, 5, 5]
    assert cfg.episode_steps() == 20  # a training trial
    with pytest.raises(ValueError, match="unknown split"):
        cfg.attempts("eval")
    with pytest.raises(ValidationError):
        HalfCheetahVelConfig(k_eval=0)


def test_metaworld_config_defaults_to_k_episodes_everywhere() -> None:
    cfg = MetaworldConfig()
    assert (cfg.k_train, cfg.k_eval) == (None, None)
    assert [cfg.attempts(s) for s in SPLITS] == [3, 3, 3]
    assert cfg.episode_steps() == 3 * 500
    assert [MetaworldConfig(k_episodes=5).attempts(s) for s in SPLITS] == [5, 5, 5]
    assert MetaworldConfig.fields_missing_docs() == []


@pytest.mark.parametrize(
    ("options", "expected", "episode"),
    [
        ({"k_train": 2, "k_eval": 6}, [2, 6, 6], 2 * 500),
        ({"k_train": 2}, [2, 2, 2], 2 * 500),  # eval follows the train count
        ({"k_eval": 10}, [3, 10, 10], 3 * 500),  # train keeps k_episodes
        ({"k_episodes": 4, "k_eval": 1}, [4, 1, 1], 4 * 500),
    ],
)
def test_metaworld_config_splits_attempts(options: dict, expected: list[int], episode: int) -> None:
    cfg = MetaworldConfig(**options)
    assert [cfg.attempts(s) for s in SPLITS] == expected
    assert cfg.episode_steps() == episode
    with pytest.raises(ValueError, match="unknown split"):
        cfg.attempts("unseen")


# ----- HalfCheetahVel envs (mujoco) -----


def test_half_cheetah_vel_default_env_is_unchanged_draw_for_draw() -> None:
    pytest.importorskip("mujoco")
    from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv
    from gymnasium.utils import seeding

    suite = HALF_CHEETAH_VEL.build(
        {"max_episode_steps": 6, "task_min_velocity": 1.0, "task_max_velocity": 2.0}
    )
    for split in SPLITS:
        env = suite.make_gym_env(split)
        assert env.observation_space.shape == (17,)  # no attempt flag with one attempt per trial
        obs, _ = env.reset(seed=11)
        # The target, then the cheetah's seed, from this env's generator and nothing drawn in between.
        rng, _ = seeding.np_random(11)
        assert env.target_velocity == rng.uniform(1.0, 2.0)
        expected_obs, _ = HalfCheetahEnv().reset(seed=int(rng.integers(2**31)))
        np.testing.assert_array_equal(obs, expected_obs.astype(np.float32))
        steps = play(env, np.full(6, 0.3, dtype=np.float32))
        assert len(steps) == 6
        assert [s[3] for s in steps] == [False] * 5 + [True]
        assert not any(s[2] for s in steps)
        assert all(logged(s[4]) == {} for s in steps[:-1])
        assert set(logged(steps[-1][4])) == VELOCITY_METRICS  # no per-attempt keys with one attempt


@pytest.mark.parametrize(("split", "k"), [("train", 2), ("val", 3), ("test", 3)])
def test_half_cheetah_vel_trials_have_the_splits_attempts(split: str, k: int) -> None:
    pytest.importorskip("mujoco")
    suite = HALF_CHEETAH_VEL.build({"max_episode_steps": 4, "k_train": 2, "k_eval": 3})
    env = suite.make_gym_env(split)
    assert env.observation_space.shape == (18,)
    obs, _ = env.reset(seed=0)
    assert obs[-1] == 1.0
    target = env.target_velocity
    steps = play(env, np.full(6, 0.5, dtype=np.float32))
    assert len(steps) == 4 * k
    assert [s[3] for s in steps] == [False] * (4 * k - 1) + [True]
    flags = [float(s[0][-1]) for s in steps]
    assert flags == [1.0 if t % 4 == 3 and t < 4 * k - 1 else 0.0 for t in range(4 * k)]
    assert all(s[4]["target_velocity"] == target for s in steps)  # one target for the whole trial
    metrics = logged(steps[-1][4])
    rewards = [s[1] for s in steps]
    for i in range(k):
        assert metrics[f"Trial {i} Return"] == pytest.approx(sum(rewards[4 * i : 4 * i + 4]))
        velocities = [s[4]["x_velocity"] for s in steps[4 * i : 4 * i + 4]]
        error = np.abs(np.asarray(velocities) - target).mean()
        assert metrics[f"Trial {i} Target Velocity Error at Final 50 Timesteps"] == pytest.approx(error)
    assert f"Trial {k} Return" not in metrics
    assert set(metrics) >= VELOCITY_METRICS


def test_half_cheetah_vel_soft_reset_restarts_the_cheetah() -> None:
    pytest.importorskip("mujoco")
    env = HALF_CHEETAH_VEL.build({"max_episode_steps": 30, "k_train": 2}).make_gym_env("train")
    env.reset(seed=0)
    steps = play(env, np.ones(6, dtype=np.float32))
    # A reset cheetah's joint positions are within 0.1 of its rest pose: far from where 29 steps of full
    # torque leave them, and the next attempt starts from there.
    moved, restarted = steps[28][0][:8], steps[29][0][:8]
    assert steps[29][0][-1] == 1.0
    assert np.abs(restarted).max() <= 0.1 + 1e-6
    assert np.abs(moved).max() > 0.3


def test_half_cheetah_vel_flag_is_in_every_split_when_any_has_attempts() -> None:
    pytest.importorskip("mujoco")
    suite = HALF_CHEETAH_VEL.build({"max_episode_steps": 3, "k_eval": 4})
    train, test = suite.make_env("train"), suite.make_env("test")
    assert train.env.observation_space == test.env.observation_space
    assert train.env.observation_space.shape == (18,)
    assert (train.env.k_episodes, test.env.k_episodes) == (1, 4)
    timestep, _ = test.reset(seed=0)
    assert timestep.obs["observation"].shape == (1, 18)
    for t in range(1, 13):
        _, _, terminated, truncated, _ = test.step(np.zeros((1, 6), dtype=np.float32))
        assert bool(terminated[0] or truncated[0]) is (t == 12)
    with pytest.raises(ValueError, match="unknown split"):
        suite.make_env("unseen")


# ----- Meta-World envs (metaworld) -----


@pytest.mark.parametrize(("options", "expected"), [({}, (3, 3, 3)), ({"k_train": 1, "k_eval": 2}, (1, 2, 2))])
def test_metaworld_envs_take_the_splits_trials(options: dict, expected: tuple[int, ...]) -> None:
    pytest.importorskip("metaworld")
    suite = METAWORLD.build({"task": "ml1-reach-v3", "max_episode_steps": 2, **options})
    for split, k in zip(SPLITS, expected, strict=True):
        env = suite.make_gym_env(split)
        assert env.k_episodes == k
        env.reset(seed=0)
        steps = play(env, np.zeros(4, dtype=np.float32))
        assert len(steps) == 2 * k
        assert steps[-1][2]
        metrics = logged(steps[-1][4])
        assert {f"Trial {i} Success" for i in range(k)} | {"Total Successes"} == set(metrics)
        env.close()
