"""The ``half_cheetah_vel`` suite: the hidden-velocity reward, truncation, velocity metrics, the CLI, hygiene."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "disable")  # no display; these tests never render

from amago_core.plugins.registry import registries
from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX
from amago_envs.suites.half_cheetah_vel.specs import HALF_CHEETAH_VEL

pytest.importorskip("mujoco")

from amago_envs.suites.half_cheetah_vel.env import HalfCheetahVel

METRICS = (
    "Mean Velocity",
    "Max Velocity",
    "Avg. Last 50 Timestep Velocity",
    "Target Velocity Error at Final 50 Timesteps",
)


TINY = [
    "traj_encoder.d_hidden=16", "traj_encoder.d_output=16", "tstep_encoder.d_hidden=16",
    "tstep_encoder.d_output=16", "env.max_episode_steps=6", "run.max_seq_len=4", "replay.traj_save_len=7",
    "rollout.parallel_actors=2", "schedule.epochs=1", "schedule.train_timesteps_per_epoch=7",
    "schedule.train_batches_per_epoch=1", "schedule.val_interval=1", "schedule.val_timesteps_per_epoch=7",
    "optim.batch_size=2", "logging.plot=false",
]  # fmt: skip
"""``-o`` settings of a one-epoch GRU job: 2 actors x 7 steps of 6-step episodes."""


def test_reward_is_minus_velocity_error_minus_ctrl_cost() -> None:
    env = HalfCheetahVel(task_min_velocity=1.0, task_max_velocity=2.0, max_episode_steps=60)
    obs, _ = env.reset(seed=3)
    assert obs.dtype == np.float32
    assert obs.shape == (17,)
    assert 1.0 <= env.target_velocity <= 2.0
    rng = np.random.default_rng(0)
    velocities = []
    for t in range(60):
        action = rng.uniform(-1, 1, size=6).astype(np.float32)
        obs, reward, terminated, truncated, info = env.step(action)
        velocities.append(info["x_velocity"])
        expected = -abs(info["x_velocity"] - env.target_velocity) - 0.05 * float(np.square(action).sum())
        assert reward == pytest.approx(expected, rel=1e-6)
        assert not terminated
        assert truncated == (t == 59)
    logged = {
        k.removeprefix(AMAGO_ENV_LOG_PREFIX).strip(): v
        for k, v in info.items()
        if k.startswith(AMAGO_ENV_LOG_PREFIX)
    }
    assert set(logged) == set(METRICS)
    last = np.asarray(velocities[-50:])
    assert logged["Mean Velocity"] == pytest.approx(np.mean(velocities))
    assert logged["Max Velocity"] == pytest.approx(np.max(velocities))
    assert logged["Avg. Last 50 Timestep Velocity"] == pytest.approx(last.mean())
    assert logged["Target Velocity Error at Final 50 Timesteps"] == pytest.approx(
        np.abs(last - env.target_velocity).mean()
    )
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(6, dtype=np.float32))


def test_targets_vary_per_reset_within_the_range() -> None:
    env = HalfCheetahVel()
    env.reset(seed=0)
    targets = []
    for _ in range(20):
        env.reset()
        targets.append(env.target_velocity)
    assert min(targets) >= 0.0
    assert max(targets) <= 3.0
    assert len(set(targets)) == 20


def test_suite_builds_an_amago_env() -> None:
    suite = registries().env_suites.build({"kind": "half_cheetah_vel", "task_max_velocity": 1.0})
    env = suite.make_env("test")
    assert env.env_name == "HalfCheetahVel-0-1"
    timestep, _ = env.reset(seed=0)
    assert timestep.obs["observation"].shape == (1, 17)
    timestep, reward, *_ = env.step(np.zeros((1, 6), dtype=np.float32))
    assert reward.shape == (1,)
    assert reward[0] <= 0.0
    with pytest.raises(ValueError, match="task_min_velocity"):
        registries().env_suites.build({"kind": "half_cheetah_vel", "task_min_velocity": 4.0})


def test_cli_runs_one_tiny_epoch_with_the_preset(dry_run, run_tiny) -> None:
    config = dry_run("half-cheetah-vel")
    assert config["run"]["max_seq_len"] == 32
    assert config["replay"]["traj_save_len"] == 192
    assert config["agent"]["gamma"] == 0.99
    assert config["agent"]["tau"] == 0.005
    assert config["optim"]["learning_rate"] == 3e-4
    assert config["optim"]["grad_clip"] == 2.0
    summary = run_tiny("half-cheetah-vel", "--traj-encoder", "gru", overrides=TINY)
    assert summary["total_frames"] == 14
    assert (
        "Average Target Velocity Error at Final 50 Timesteps in HalfCheetahVel-0-3" in summary["final_test"]
    )


def test_specs_module_imports_no_heavy_library(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.half_cheetah_vel.specs", ("torch", "gymnasium", "mujoco"))


def test_missing_mujoco_reports_the_install_hint(assert_missing_extra) -> None:
    assert_missing_extra(HALF_CHEETAH_VEL, "mujoco", "half-cheetah-vel", build={"kind": "half_cheetah_vel"})
