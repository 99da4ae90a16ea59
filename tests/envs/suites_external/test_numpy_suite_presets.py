"""Presets of the numpy suites (T-Maze, Meta-Frozen-Lake, Dark Key-To-Door): the examples' hyperparameters."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("env_id", "length"), [("tmaze-passive", 11), ("tmaze-active", 13)])
def test_tmaze_preset_is_example_04(env_id: str, length: int, dry_run) -> None:
    config = dry_run(env_id)
    assert config["run"]["max_seq_len"] == config["replay"]["traj_save_len"] == length
    assert config["schedule"]["val_timesteps_per_epoch"] == length
    assert config["agent"]["reward_multiplier"] == 100.0
    assert config["agent"]["gamma"] == 0.9999
    assert not config["rollout"]["sample_actions_train"]
    assert not config["rollout"]["sample_actions_val"]
    assert config["tstep_encoder"]["d_output"] == 128
    assert not config["tstep_encoder"]["normalize_inputs"]
    assert config["exploration"]["eps_end"] == 0.01
    assert config["exploration"]["steps_anneal"] == 100_000


def test_frozen_lake_preset_is_example_00(dry_run) -> None:
    config = dry_run("frozen-lake")
    assert config["traj_encoder"]["d_model"] == 128
    assert config["traj_encoder"]["n_layers"] == 3
    assert config["run"]["max_seq_len"] == config["replay"]["traj_save_len"] == 250
    assert config["agent"]["tau"] == 0.004
    assert config["replay"]["dset_max_size"] == 12_500
    assert config["rollout"]["parallel_actors"] == 32
    assert config["schedule"]["epochs"] == 700
    assert config["optim"]["length_group_batches"] == 8  # amago's addition: meta-episodes vary in length


def test_key_door_preset_is_example_05(dry_run) -> None:
    config = dry_run("key-door")
    assert config["exploration"]["kind"] == "bilevel"
    assert config["exploration"]["rollout_horizon"] == 500
    assert config["run"]["max_seq_len"] == config["replay"]["traj_save_len"] == 500
    assert config["agent"]["reward_multiplier"] == 100.0
    assert config["tstep_encoder"]["d_output"] == 64


def test_user_choices_beat_the_preset(dry_run) -> None:
    config = dry_run("frozen-lake", "--traj-encoder", "gru", "-o", "run.max_seq_len=64")
    assert config["traj_encoder"]["kind"] == "rnn"  # the preset's transformer options do not leak into it
    assert config["run"]["max_seq_len"] == 64
    config = dry_run("key-door", "--exploration", "egreedy")
    assert config["exploration"]["kind"] == "egreedy"


def test_specs_stay_torch_and_gymnasium_free(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.specs", ("torch", "gymnasium"))
