"""gymnax suite: registry build, the already-vectorised AMAGOEnv contract, presets and a one-epoch CLI run."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("gymnax", reason='needs the gymnax extra: pip install "amago-envs[gymnax]"')


from amago_core.config.presets import preset_for_env
from amago_core.plugins.registry import registries
from amago_envs.suites.gymnax.specs import GYMNAX_TASKS

TINY_OVERRIDES = [
    "env.num_envs=2",
    "rollout.parallel_actors=2",
    "run.max_seq_len=8",
    "replay.traj_save_len=8",
    "tstep_encoder.n_layers=1",
    "tstep_encoder.d_hidden=16",
    "tstep_encoder.d_output=16",
    "traj_encoder.kind=rnn",
    "schedule.epochs=1",
    "schedule.train_timesteps_per_epoch=8",
    "schedule.train_batches_per_epoch=2",
    "schedule.val_interval=1",
    "schedule.val_timesteps_per_epoch=8",
    "optim.batch_size=4",
    "logging.plot=false",
]


def make(task: str = "MemoryChain-bsuite", **options):
    return registries().env_suites.build({"kind": "gymnax", "task": task, **options})


@pytest.mark.slow
def test_memory_chain_batch_follows_the_amagoenv_contract() -> None:
    # Same shapes as the CLI test below, so both use one compiled program.
    env = make(num_envs=2, env_params={"memory_length": 3}, seed=0).make_env("train")
    assert env.batched_envs == 2
    assert env.env_name == "gymnax-MemoryChain-bsuite"
    assert env.env_names == ["gymnax-MemoryChain-bsuite"] * 2
    assert list(env.observation_space.spaces) == ["observation"]
    assert env.observation_space["observation"].shape == (3,)  # one row, not the batch
    assert env.action_dim == 2
    assert env.is_discrete
    timestep, _ = env.reset()
    assert timestep.obs["observation"].shape == (2, 3)
    assert timestep.prev_action.shape == (2, 2)
    # MemoryChain with memory_length=3 ends on step 4 with a ±1 reward; the row restarts in the same step.
    for step in range(1, 5):
        timestep, reward, terminated, truncated, _ = env.step(np.array([0, 1]))
        np.testing.assert_array_equal(timestep.prev_action, np.eye(2, dtype=np.uint8)[[0, 1]])
        if step < 4:
            assert not terminated.any()
            assert (reward == 0).all()
            np.testing.assert_array_equal(env.step_count, [step] * 2)
    assert terminated.all()
    assert not truncated.any()
    assert set(np.abs(reward).tolist()) == {1.0}
    np.testing.assert_array_equal(timestep.time_idx, [4, 4])
    np.testing.assert_array_equal(env.step_count, [0, 0])  # same-step autoreset
    timestep, *_ = env.step(np.array([0, 0]))
    np.testing.assert_array_equal(timestep.time_idx, [1, 1])


def test_time_limit_is_reported_as_truncation_and_box_actions_are_rescaled() -> None:
    env = make("Pendulum-v1", num_envs=2, env_params={"max_steps_in_episode": 3}, seed=1).make_env()
    assert env.observation_space["observation"].shape == (3,)
    env.reset()
    for _ in range(3):
        _, _, terminated, truncated, _ = env.step(np.array([[1.0], [-1.0]], dtype=np.float32))
    assert truncated.all()
    assert not terminated.any()


def test_image_tasks_keep_the_declared_dtype() -> None:
    env = make("Breakout-MinAtar", num_envs=2, seed=0).make_env()
    timestep, _ = env.reset()
    assert timestep.obs["observation"].shape == (2, 10, 10, 4)
    assert timestep.obs["observation"].dtype == np.float32


def test_unknown_env_param_and_task_fail_with_the_next_step() -> None:
    with pytest.raises(ValueError, match=r"memory_lenght.*Did you mean 'memory_length'"):
        make(env_params={"memory_lenght": 3}).make_env()
    with pytest.raises(ValueError, match="Did you mean 'CartPole-v1'"):
        make("CartPole-v2")


def test_every_static_task_is_registered_in_gymnax() -> None:
    import gymnax

    assert set(GYMNAX_TASKS) == set(gymnax.registered_envs)


def test_preset_runs_already_vectorised_with_matching_batch() -> None:
    preset = preset_for_env("gymnax-CartPole-v1")
    assert preset["rollout"]["env_mode"] == "already_vectorized"
    assert preset["rollout"]["parallel_actors"] == preset["env"]["num_envs"]
    assert preset["replay"]["traj_save_len"] == 20 * preset["run"]["max_seq_len"]


def test_spec_module_imports_no_heavy_library(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.gymnax.specs", ("torch", "gymnasium", "jax", "gymnax"))


def test_amago_run_one_tiny_epoch(tmp_path, run_tiny) -> None:
    overrides = [*TINY_OVERRIDES, "env.env_params.memory_length=3"]
    summary = run_tiny("gymnax-MemoryChain-bsuite", overrides=overrides, name="gx")
    assert summary["run_dir"] == str(tmp_path / "gx")
    resolved = json.loads((tmp_path / "gx" / "config.resolved.json").read_text())
    assert resolved["rollout"]["env_mode"] == "already_vectorized"
    assert list((tmp_path / "gx" / "buffer" / "fifo").glob("gymnax-MemoryChain-bsuite_*"))
