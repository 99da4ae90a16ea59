"""Sizing a preset to a budget (`--steps`, `--budget`, `--smoke`): pure arithmetic over the resolved config."""

from __future__ import annotations

import pytest

from amago_core.config.lengths import longest_sample
from amago_core.config.resolve import resolve_config
from amago_core.config.sizing import (
    SMOKE_ACTORS,
    SMOKE_LONGEST_EPISODE,
    SMOKE_STEPS_PER_ACTOR,
    BudgetError,
    apply_sizing,
    size_schedule,
    smoke_env_steps,
    smoke_steps_per_actor,
    window_within_files,
)
from amago_core.config.sources import merge_sources
from amago_tools.sizing.budget import SAFETY, Costs, estimated_seconds, parse_duration, size_for_seconds


def _resolved(flags: dict, overrides: list[str] | None = None):
    overrides = overrides or []
    return resolve_config([], flags, overrides), merge_sources([], flags, overrides)


def _sized(flags: dict, env_steps: int, overrides: list[str] | None = None, **kwargs):
    config, user = _resolved(flags, overrides)
    return config, apply_sizing(config, size_schedule(config, user, env_steps, **kwargs))


def test_steps_budget_keeps_the_update_to_data_ratio_and_shrinks_steps_per_epoch_first():
    config, sized = _sized({"env": "metaworld-ml45", "traj_encoder": "mamba"}, 200_000)
    old, new = config.schedule, sized.schedule
    actors = sized.rollout.parallel_actors
    total = new.epochs * new.train_timesteps_per_epoch * actors
    assert 200_000 <= total < 200_000 + new.train_timesteps_per_epoch * actors
    assert new.epochs >= 10
    ratio_old = old.train_batches_per_epoch / old.train_timesteps_per_epoch
    assert new.train_batches_per_epoch / new.train_timesteps_per_epoch == pytest.approx(ratio_old, rel=0.05)
    # Validation: one whole meta-episode per pass (3 trials of 500 steps) instead of the preset's 15, and few passes.
    assert new.val_timesteps_per_epoch == 1501 < old.val_timesteps_per_epoch
    passes = -(-new.epochs // new.val_interval)
    assert passes * new.val_timesteps_per_epoch <= 0.2 * new.epochs * new.train_timesteps_per_epoch + 1501
    # A much shorter run keeps the preset's exploration schedule: squeezed into the same share of it, epsilon
    # would reach its floor within the first epoch (measured on T-Maze H=30 against AMAGO: no learning).
    assert sized.exploration.steps_anneal == config.exploration.steps_anneal
    assert sized.optim.lr_warmup_steps < config.optim.lr_warmup_steps


def test_a_longer_run_anneals_exploration_over_the_same_share():
    config, sized = _sized({"env": "frozen-lake"}, 50_000_000)
    old, new = config.schedule, sized.schedule
    assert new.epochs * new.train_timesteps_per_epoch > old.epochs * old.train_timesteps_per_epoch
    share_old = config.exploration.steps_anneal / (old.epochs * old.train_timesteps_per_epoch)
    share_new = sized.exploration.steps_anneal / (new.epochs * new.train_timesteps_per_epoch)
    assert share_new == pytest.approx(share_old, rel=0.01)


def test_what_the_user_set_is_kept_and_constrains_the_rest():
    overrides = ["schedule.epochs=40", "exploration.steps_anneal=777"]
    _, sized = _sized({"env": "metaworld-ml45"}, 120_000, overrides)
    assert sized.schedule.epochs == 40
    assert sized.exploration.steps_anneal == 777
    assert sized.schedule.train_timesteps_per_epoch == 250  # 120k / 12 actors / 40 epochs


def test_smoke_shrinks_actors_steps_and_every_component_that_says_how():
    config, sized = _sized({"env": "frozen-lake", "traj_encoder": "mamba"}, 32, smoke=True)
    assert sized.rollout.parallel_actors == 2
    assert sized.schedule.epochs == 2
    assert sized.schedule.train_timesteps_per_epoch == 8
    assert sized.traj_encoder.d_model == 16
    assert sized.traj_encoder.n_layers == 1
    assert sized.tstep_encoder.d_hidden == 16
    assert sized.replay.traj_save_len == 8
    assert sized.run.max_seq_len == 8
    assert config.traj_encoder.d_model > 16


@pytest.mark.parametrize(
    "env", ["popgym-count-recall-easy", "popgym-repeat-first-hard", "frozen-lake", "key-door"]
)
def test_smoke_plays_its_episode_to_the_end_when_it_is_short_enough(env):
    # POPGym's 52-step episodes in a 16-step smoke run finished nothing: the run checked no return at all.
    config, user = _resolved({"env": env})
    episode = config.component("env").episode_steps()
    assert SMOKE_STEPS_PER_ACTOR < episode <= SMOKE_LONGEST_EPISODE
    sized = apply_sizing(config, size_schedule(config, user, smoke_env_steps(config, user), smoke=True))
    sched = sized.schedule
    assert sched.epochs == 2
    assert sched.epochs * sched.train_timesteps_per_epoch > episode  # per actor
    assert sched.val_timesteps_per_epoch > min(episode, config.schedule.val_timesteps_per_epoch - 1)
    assert sized.rollout.parallel_actors == SMOKE_ACTORS
    # ... with the updates of 8-step epochs: a longer episode does not make the smoke run minutes long.
    old = config.schedule
    paced = max(1, round(old.train_batches_per_epoch * 8 / old.train_timesteps_per_epoch))
    assert sched.train_batches_per_epoch == paced


def test_smoke_keeps_its_few_steps_when_an_episode_is_too_long_or_unknown():
    for env in ("metaworld-ml45", "popgym-multidomain", "ale-Pong"):
        config, _ = _resolved({"env": env})
        assert smoke_steps_per_actor(config) == SMOKE_STEPS_PER_ACTOR, env


def test_smoke_counts_steps_per_actor_for_the_actors_the_user_asked_for():
    config, user = _resolved({"env": "popgym-count-recall-easy"}, ["rollout.parallel_actors=3"])
    assert smoke_env_steps(config, user) == 3 * smoke_steps_per_actor(config)


def test_a_run_that_collects_nothing_cannot_be_sized_by_env_steps():
    config, user = _resolved({"env": "tmaze-passive"}, ["schedule.train_timesteps_per_epoch=0"])
    with pytest.raises(BudgetError, match="collects no env steps"):
        size_schedule(config, user, 10_000)


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("10m", 600), ("1.5h", 5400), ("45", 45)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["ten minutes", "0m", "-5m", "10d"])
def test_bad_durations_say_how_to_write_one(text):
    with pytest.raises(BudgetError, match=r"write it like 90s, 10m or 1\.5h"):
        parse_duration(text)


def test_a_wall_time_budget_fits_its_estimate_including_validation_floors():
    config, user = _resolved({"env": "metaworld-ml45", "traj_encoder": "mamba"})
    costs = Costs(
        seconds_per_pool_step=0.01, seconds_per_update=0.5, startup_seconds=10.0, sequence_length=256
    )
    sized = apply_sizing(config, size_for_seconds(config, user, costs, 600))
    assert estimated_seconds(sized, costs) <= 600
    assert estimated_seconds(sized, costs) >= 0.8 * 600 * SAFETY  # and uses most of it
    # Where the run must shrink its sequences to get data in time, its updates get cheaper: the plan counts it.
    slow = Costs(
        seconds_per_pool_step=0.01, seconds_per_update=5.0, startup_seconds=10.0, sequence_length=256
    )
    short = apply_sizing(config, size_for_seconds(config, user, slow, 600))
    assert short.run.max_seq_len < 256
    assert 0.8 * 600 * SAFETY <= estimated_seconds(short, slow) <= 600 * SAFETY
    faster = apply_sizing(config, size_for_seconds(config, user, Costs(0.01, 0.05, 10.0, 256), 600))
    assert faster.schedule.epochs * faster.schedule.train_timesteps_per_epoch > (
        sized.schedule.epochs * sized.schedule.train_timesteps_per_epoch
    )


def test_a_budget_shorter_than_the_start_says_so():
    config, user = _resolved({"env": "tmaze-passive"})
    with pytest.raises(BudgetError, match="starting this run takes 30 s"):
        size_for_seconds(config, user, Costs(0.01, 0.1, 30.0, 11), 20)


def test_a_window_the_user_set_keeps_files_long_enough_to_hold_it():
    # A 10k-step budget wants files of ~200 steps so that data exists early; the user's 500-step window wins.
    _, sized = _sized({"env": "key-door"}, 10_000, ["run.max_seq_len=500"])
    assert sized.run.max_seq_len == 500
    assert sized.replay.traj_save_len >= 500


def test_a_window_nobody_set_is_cut_to_the_shorter_files():
    config, sized = _sized({"env": "key-door"}, 10_000)
    assert sized.run.max_seq_len == sized.replay.traj_save_len < config.run.max_seq_len


@pytest.mark.parametrize(
    ("user_set", "expected"),
    [
        ({}, {"run": {"max_seq_len": 100}}),
        ({"run": {"max_seq_len": 256}}, {"replay": {"traj_save_len": 256}}),
        ({"run": {"max_seq_len": 256}, "replay": {"traj_save_len": 100}}, {}),  # the user's own conflict
    ],
)
def test_window_within_files_yields_to_what_the_user_set(user_set, expected):
    config, _ = _resolved({"env": "metaworld-ml45"})
    assert config.run.max_seq_len == 256
    assert window_within_files(config, {"replay": {"traj_save_len": 100}}, user_set) == expected


def test_an_update_on_windows_longer_than_the_timed_ones_costs_more():
    costs = Costs(
        seconds_per_pool_step=0.01, seconds_per_update=1.0, startup_seconds=1.0, sequence_length=300
    )
    assert costs.update_seconds(600) == pytest.approx(2.0)
    assert costs.update_seconds(150) == pytest.approx(0.5)


def test_a_budget_that_cannot_fit_the_smallest_run_says_so_instead_of_sizing_it_to_nothing():
    # This machine's costs for popgym with validation passes of 2,000 steps (the user's choice here): they alone
    # take ~90 s, so what is left of a 2-minute budget once measured used to become a run of one step per actor.
    config, user = _resolved(
        {"env": "popgym-count-recall-easy", "schedule": {"val_timesteps_per_epoch": 2000}}
    )
    costs = Costs(
        seconds_per_pool_step=0.022, seconds_per_update=1.5, startup_seconds=1.0, sequence_length=300
    )
    with pytest.raises(
        BudgetError,
        match=r"cannot fit the smallest run .* validation passes of 2,000 steps.*give --budget \d+[smh] or more",
    ):
        size_for_seconds(config, user, costs, 100)
    sized = apply_sizing(config, size_for_seconds(config, user, costs, 600))
    assert sized.schedule.epochs >= 10


def test_updates_cost_what_they_sample_one_episode_not_the_whole_window():
    # POPGym's preset keeps AMAGO's 2000-step window, but every trajectory file ends with its 52-step episode:
    # an update trains on 53-timestep sequences, and a budget is sized for those.
    config, user = _resolved({"env": "popgym-repeat-previous-easy"})
    assert config.run.max_seq_len == 2000
    assert longest_sample(config) == 53
    costs = Costs(seconds_per_pool_step=0.01, seconds_per_update=0.5, startup_seconds=1.0, sequence_length=53)
    sized = apply_sizing(config, size_for_seconds(config, user, costs, 600))
    assert estimated_seconds(sized, costs) == pytest.approx(600 * SAFETY, rel=0.1)
    assert sized.schedule.val_timesteps_per_epoch < 2000  # validation on whole episodes, not the horizon


@pytest.mark.parametrize(
    ("env", "steps"), [("metaworld-ml1-reach-v3", 20_000), ("tmaze", 2_000), ("key-door", 30_000)]
)
def test_a_short_sized_run_validates_twice_after_learning_starts(env, steps):
    # Epoch 0's pass is the untrained policy's; a budget too small for many passes still gets two after it
    # (before: Meta-World at 20k steps validated at epoch 0 only, so "best val" was the untrained policy's).
    _, sized = _sized({"env": env}, steps)
    sched = sized.schedule
    val_epochs = range(0, sched.epochs, sched.val_interval)
    assert sum(epoch > sched.start_learning_at_epoch for epoch in val_epochs) >= 2, sched
