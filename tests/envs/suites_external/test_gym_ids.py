"""The ``gym`` suite: id resolution, discrete / continuous / dict-obs envs, dm_control, the CLI, hygiene."""

from __future__ import annotations

import sys

import pytest

from amago_core.plugins.errors import MissingRequirementError
from amago_envs.suites.gym_ids.specs import GYM
from amago_envs.suites.gym_ids.suite import fold_gym_id


def test_ids_resolve_verbatim_or_path_safe(build) -> None:
    assert build("gym-CartPole-v1").gym_id == "CartPole-v1"
    assert build("gym-cartpole-v1").gym_id == "CartPole-v1"
    suite = build("gym-dm-control-cartpole-swingup-v0")
    assert suite.gym_id == "dm_control/cartpole-swingup-v0"
    assert suite.env_name == "dm-control-cartpole-swingup-v0"
    assert build("gym-dm_control/cartpole-swingup-v0").gym_id == "dm_control/cartpole-swingup-v0"
    assert fold_gym_id("dm_control/cheetah-run-v0") == "dm-control-cheetah-run-v0"


def test_unknown_id_lists_close_registered_ids(build) -> None:
    with pytest.raises(ValueError, match=r"no env 'CartPol-v1'.*Close ids: CartPole-v1"):
        build("gym-CartPol-v1")


def test_discrete_env_contract_and_returns(build, play) -> None:
    env = build("gym-CartPole-v1").make_env("train")
    assert env.env_name == "CartPole-v1"
    timestep, seq = play(env, 200)
    assert timestep.obs["observation"].shape == (1, 4)
    assert timestep.rl2().shape == (1, 1 + 2)
    assert seq.return_history["CartPole-v1"]  # random play ends CartPole episodes well within 200 steps


def test_continuous_env_rescales_actions(build, play) -> None:
    env = build("gym-Pendulum-v1", max_episode_steps=10).make_env("val")
    timestep, seq = play(env, 25)
    assert timestep.rl2().shape == (1, 2)
    assert len(seq.return_history["Pendulum-v1"]) == 2  # two 10-step episodes


def test_dm_control_dict_obs_keeps_keys_or_flattens(build, play) -> None:
    env = build("gym-dm-control-cartpole-swingup-v0").make_env("train")
    timestep, _ = env.reset(seed=0)
    assert set(timestep.obs) == {"position", "velocity"}
    assert all(v.ndim == 2 for v in timestep.obs.values())
    flat = build("gym-dm-control-cartpole-swingup-v0", flatten_dict_obs=True).make_env("train")
    timestep, _ = flat.reset(seed=0)
    assert timestep.obs["observation"].shape == (1, 5)
    play(flat, 3)


def test_cli_runs_one_tiny_epoch_with_the_preset(tmp_path, dry_run, run_tiny, tiny_gru) -> None:
    config = dry_run("gym-Pendulum-v1")
    assert config["agent"]["reward_multiplier"] == 1.0
    assert config["agent"]["discrete_dist"]["clip_prob_high"] == 1.0
    assert config["replay"]["traj_save_len"] == 8 * config["run"]["max_seq_len"] == 1024
    assert run_tiny("gym-dm-control-cartpole-swingup-v0", *tiny_gru())["total_frames"] == 16
    (metrics_file,) = tmp_path.glob("*/metrics.jsonl")
    assert "total_frames-dm-control-cartpole-swingup-v0" in metrics_file.read_text()


def test_specs_module_imports_no_heavy_library(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.gym_ids.specs", ("torch", "gymnasium", "shimmy"))


def test_missing_gymnasium_reports_the_install_hint(assert_missing_extra) -> None:
    assert_missing_extra(GYM, "gymnasium", "gym")


def test_missing_shimmy_names_the_gym_extra(monkeypatch, build) -> None:
    monkeypatch.setitem(sys.modules, "shimmy", None)  # makes `import shimmy` fail like an absent package
    with pytest.raises(MissingRequirementError, match=r"amago-envs\[gym\]"):
        build("gym-dm-control-cheetah-run-v0")
