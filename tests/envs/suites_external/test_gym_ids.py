"""The ``gym`` suite: id resolution, discrete / continuous / dict-obs envs, dm_control, the CLI, hygiene."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.plugins.errors import MissingRequirementError
from amago_core.plugins.registry import registries
from amago_envs.sequence import SequenceEnv
from amago_envs.suites.gym_ids.specs import GYM
from amago_envs.suites.gym_ids.suite import fold_gym_id

TINY = [
    "--traj-encoder", "gru", "-o", "traj_encoder.d_hidden=16", "-o", "traj_encoder.d_output=16",
    "-o", "tstep_encoder.d_hidden=16", "-o", "tstep_encoder.d_output=16", "-o", "schedule.epochs=1",
    "-o", "schedule.train_timesteps_per_epoch=8", "-o", "schedule.train_batches_per_epoch=1",
    "-o", "schedule.val_interval=null", "-o", "schedule.val_timesteps_per_epoch=8", "-o", "run.max_seq_len=8",
    "-o", "replay.traj_save_len=16", "-o", "rollout.parallel_actors=2", "-o", "optim.batch_size=2", "--quiet",
]  # fmt: skip


def build(env_id: str, **options):
    regs = registries()
    suite_name, task = regs.resolve_env_id(env_id)
    return regs.env_suites.build({"kind": suite_name, "task": task, **options})


def play(env, steps: int, seed: int = 0):
    """Random actions through a SequenceEnv; returns the final timestep and the env."""
    seq = SequenceEnv(env)
    timestep = seq.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if env.is_discrete:
            action = rng.integers(env.action_space.n, size=(1,))
        else:
            action = rng.uniform(-1, 1, size=(1, *env.action_space.shape)).astype(np.float32)
        timestep = seq.step(action).timestep
    return timestep, seq


def test_ids_resolve_verbatim_or_path_safe() -> None:
    assert build("gym-CartPole-v1").gym_id == "CartPole-v1"
    assert build("gym-cartpole-v1").gym_id == "CartPole-v1"
    suite = build("gym-dm-control-cartpole-swingup-v0")
    assert suite.gym_id == "dm_control/cartpole-swingup-v0"
    assert suite.env_name == "dm-control-cartpole-swingup-v0"
    assert build("gym-dm_control/cartpole-swingup-v0").gym_id == "dm_control/cartpole-swingup-v0"
    assert fold_gym_id("dm_control/cheetah-run-v0") == "dm-control-cheetah-run-v0"


def test_unknown_id_lists_close_registered_ids() -> None:
    with pytest.raises(ValueError, match=r"no env 'CartPol-v1'.*Close ids: CartPole-v1"):
        build("gym-CartPol-v1")


def test_discrete_env_contract_and_returns() -> None:
    env = build("gym-CartPole-v1").make_env("train")
    assert env.env_name == "CartPole-v1"
    timestep, seq = play(env, 200)
    assert timestep.obs["observation"].shape == (1, 4)
    assert timestep.rl2().shape == (1, 1 + 2)
    assert seq.return_history["CartPole-v1"]  # random play ends CartPole episodes well within 200 steps


def test_continuous_env_rescales_actions() -> None:
    env = build("gym-Pendulum-v1", max_episode_steps=10).make_env("val")
    timestep, seq = play(env, 25)
    assert timestep.rl2().shape == (1, 2)
    assert len(seq.return_history["Pendulum-v1"]) == 2  # two 10-step episodes


def test_dm_control_dict_obs_keeps_keys_or_flattens() -> None:
    env = build("gym-dm-control-cartpole-swingup-v0").make_env("train")
    timestep, _ = env.reset(seed=0)
    assert set(timestep.obs) == {"position", "velocity"}
    assert all(v.ndim == 2 for v in timestep.obs.values())
    flat = build("gym-dm-control-cartpole-swingup-v0", flatten_dict_obs=True).make_env("train")
    timestep, _ = flat.reset(seed=0)
    assert timestep.obs["observation"].shape == (1, 5)
    play(flat, 3)


def test_cli_runs_one_tiny_epoch_with_the_preset(tmp_path) -> None:
    runner = CliRunner()
    dry = runner.invoke(app, ["run", "--env", "gym-Pendulum-v1", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    config = json.loads(dry.stdout)
    assert config["agent"]["reward_multiplier"] == 1.0
    assert config["agent"]["discrete_dist"]["clip_prob_high"] == 1.0
    assert config["replay"]["traj_save_len"] == 8 * config["run"]["max_seq_len"] == 1024
    result = runner.invoke(
        app,
        ["run", "--env", "gym-dm-control-cartpole-swingup-v0", *TINY, "-o", f"run.ckpt_base_dir={tmp_path}"],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total_frames"] == 16
    (metrics_file,) = tmp_path.glob("*/metrics.jsonl")
    assert "total_frames-dm-control-cartpole-swingup-v0" in metrics_file.read_text()


def test_specs_module_imports_no_heavy_library() -> None:
    code = (
        "import sys\nimport amago_envs.suites.gym_ids.specs\n"
        "print(','.join(m for m in ('torch', 'gymnasium', 'shimmy') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_missing_gymnasium_reports_the_install_hint(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gymnasium" else real(name, *a)
    )
    assert GYM.missing_requirements() == ["gymnasium"]
    info = next(i for i in registries().env_suites.describe() if i.name == "gym")
    assert info.status == "missing"
    assert 'pip install "amago-envs[gym]"' in info.detail


def test_missing_shimmy_names_the_gym_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "shimmy", None)  # makes `import shimmy` fail like an absent package
    with pytest.raises(MissingRequirementError, match=r"amago-envs\[gym\]"):
        build("gym-dm-control-cheetah-run-v0")
