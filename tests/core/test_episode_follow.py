"""Presets follow the env: settings a preset (or the main job) wrote for one episode length follow the user's."""

from __future__ import annotations

import warnings

import pytest

from amago_core.config.episode import ShortMemoryWarning
from amago_core.config.resolve import resolve_config
from amago_core.config.sources import read_config_file


def _resolve(env: str | None, *overrides: str, files=()):
    from amago.default_job import DEFAULT_JOB

    flags = {"env": env} if env else {}
    return resolve_config(list(files), flags, list(overrides), default_job=DEFAULT_JOB)


def test_tmaze_lengths_follow_the_corridor():
    default = _resolve("tmaze-active")
    assert default.run.max_seq_len == default.replay.traj_save_len == 13  # 10-cell corridor + detour + turn
    longer = _resolve("tmaze-active", "env.corridor_length=20")
    assert longer.run.max_seq_len == longer.replay.traj_save_len == 23
    assert longer.schedule.val_timesteps_per_epoch == 23
    # The T-Maze exploration's corridor follows the env's: steps [1, H - 3) at 0.5 / H.
    assert longer.exploration.kind == "tmaze"
    assert longer.exploration.corridor_steps == (1, 17)
    assert longer.exploration.corridor_eps == pytest.approx(0.5 / 20)
    assert default.exploration.corridor_steps == (1, 7)


def test_the_main_job_follows_too_and_keeps_its_update_to_data_ratio():
    job = _resolve(None, "env.corridor_length=30")
    assert job.run.max_seq_len == job.replay.traj_save_len == 31
    assert job.schedule.train_timesteps_per_epoch == job.schedule.train_batches_per_epoch == 31
    assert job.schedule.val_timesteps_per_epoch == 62  # the job's two episodes per val env


def test_a_config_file_that_lengthens_the_corridor_gets_whole_episodes(tmp_path):
    path = tmp_path / "tmaze20.toml"
    path.write_text('env = { id = "tmaze-passive", corridor_length = 20 }\n')
    config = _resolve(None, files=[path])
    assert read_config_file(path)["env"]["corridor_length"] == 20
    assert config.run.max_seq_len == 21


def test_frozen_lake_follows_its_attempts():
    config = _resolve("frozen-lake", "env.k_episodes=4")
    assert config.run.max_seq_len == config.replay.traj_save_len == 100  # 4 attempts x 25 steps
    assert config.schedule.train_timesteps_per_epoch == 100
    assert config.schedule.train_batches_per_epoch == 400  # 1000 updates per 250 steps, kept
    assert config.schedule.val_timesteps_per_epoch == 200


def test_a_window_shorter_than_the_episode_stays_a_window():
    config = _resolve("metaworld-ml45", "env.k_episodes=5")
    assert config.run.max_seq_len == 256  # AMAGO's context for Meta-World, not a whole meta-episode
    assert config.replay.traj_save_len == 1024
    assert config.exploration.rollout_horizon == 2500
    assert config.schedule.val_timesteps_per_epoch == round(22501 * 5 / 3)


def test_what_the_user_sets_is_never_moved():
    config = _resolve("tmaze-passive", "env.corridor_length=20", "replay.traj_save_len=50")
    assert config.replay.traj_save_len == 50
    assert config.run.max_seq_len == 21


def test_a_memory_shorter_than_the_episode_gets_one_warning_saying_what_to_set():
    with pytest.warns(ShortMemoryWarning, match=r"set -o run\.max_seq_len=23"):
        _resolve("tmaze-active", "env.corridor_length=20", "run.max_seq_len=13")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShortMemoryWarning)
        _resolve("tmaze-active", "env.corridor_length=20")  # followed: no warning
        _resolve("metaworld-ml45")  # not a whole-episode memory task: its 256-step window is by design


def test_a_window_longer_than_the_followed_files_is_cut_to_them():
    config = _resolve("xland-local-small", "env.k_episodes=5")  # 5 episodes of 243 steps instead of 15
    assert config.replay.traj_save_len == 1215
    assert config.run.max_seq_len == 1215  # the preset's 2048-step window would no longer fit in a file


def test_a_window_the_user_set_keeps_files_long_enough_for_it():
    # Shorter episodes shrink the files; the user's 2048-step window stays, so the files grow back to it
    # (before, this resolved to files of 1215 steps and the config refused its own window).
    config = _resolve("xland-local-small", "env.k_episodes=5", "run.max_seq_len=2048")
    assert config.run.max_seq_len == 2048
    assert config.replay.traj_save_len == 2048


def test_a_longer_trial_moves_the_val_pass_but_not_the_context():
    config = _resolve("half-cheetah-vel", "env.max_episode_steps=200")
    assert config.schedule.val_timesteps_per_epoch == 200
    assert config.run.max_seq_len == 32


def test_the_val_pass_follows_the_evaluation_attempts_and_the_files_the_training_ones():
    # Wind trains on 4 attempts and evaluates on 10: its val pass is one 10-attempt trial (751 steps), its files
    # windows of 4-attempt trials. k_eval moves only the val pass, k_train only what training counts in trials.
    base = _resolve("wind")
    assert (base.schedule.val_timesteps_per_epoch, base.replay.traj_save_len) == (751, 768)
    more_eval = _resolve("wind", "env.k_eval=20")
    assert more_eval.schedule.val_timesteps_per_epoch == 1502
    assert more_eval.replay.traj_save_len == 768
    fewer_train = _resolve("wind", "env.k_train=2")
    assert fewer_train.schedule.val_timesteps_per_epoch == 751
    assert fewer_train.replay.traj_save_len == 384
    assert fewer_train.run.max_seq_len == 128  # a window of the trial, not a whole one: it stays
