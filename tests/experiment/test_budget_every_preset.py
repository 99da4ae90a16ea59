"""`amago run --env ID --budget 15m | --steps 200k --dry-run` sizes every installed preset into a valid config.

The list of env ids comes from the installed env suites (every task, or the suite alone when it names none);
suites whose library is missing here are skipped with the suite's own reason. A real ``--budget`` starts a
throw-away copy of the run to measure the machine, far too slow for ~400 presets, so :func:`fake_machine`
stands in for that one measurement (``calibrate.time_probe``) with plausible costs; everything around it (the
probe's config, the bisection, the sized config and its checks) runs as a user's would. One preset whose window
is longer than the probe's files runs the real calibration end to end.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.lengths import longest_sample
from amago_core.config.resolve import resolve_config
from amago_core.config.sizing import SMOKE_LONGEST_EPISODE, SMOKE_STEPS_PER_ACTOR
from amago_tools.sizing import calibrate
from amago_tools.sizing.budget import SAFETY, Costs, estimated_seconds

runner = CliRunner()


def _every_env_id() -> list[Any]:
    from amago_core.plugins.registry import Status, registries

    ids: list[Any] = []
    for info in registries().env_suites.describe():
        suite = info.name.replace("_", "-")
        if info.spec is None:  # a broken spec: other tests report it; nothing here to size
            ids.append(pytest.param(suite, marks=pytest.mark.skip(reason=info.detail), id=suite))
            continue
        tasks = [f"{suite}-{task}" for task in info.spec.tasks] or [suite]
        skip = () if info.status is Status.OK else (pytest.mark.skip(reason=info.detail),)
        ids += [pytest.param(env_id, marks=skip, id=env_id) for env_id in tasks]
    return ids


EVERY_ENV_ID = _every_env_id()


def _config_of(output: str) -> dict[str, Any]:
    return json.loads(output[output.index("{") :])


@pytest.fixture
def fake_machine(monkeypatch) -> list[tuple[ExperimentConfig, Costs]]:
    """Stands in for the calibration's measurement; returns each probe config it was given with its costs.

    The figures are a fast machine's (0.5 ms per env step with the policy, 1 ms per window step of an update),
    so that every preset's validation floors fit a 15-minute budget and the bisection sizes a real schedule.
    """
    seen: list[tuple[ExperimentConfig, Costs]] = []

    def time_probe(probe: ExperimentConfig) -> Costs:
        window = longest_sample(probe)  # what the real probe's updates sample
        costs = Costs(
            seconds_per_pool_step=0.0005 * probe.rollout.parallel_actors,
            seconds_per_update=0.001 * window,
            startup_seconds=2.0,
            sequence_length=window,
        )
        seen.append((probe, costs))
        return costs

    monkeypatch.setattr(calibrate, "time_probe", time_probe)
    return seen


def _check_sized(env_id: str, flags: list[str]) -> dict[str, Any]:
    result = runner.invoke(app, ["run", "--env", env_id, *flags, "--dry-run"])
    assert result.exit_code == 0, result.output
    assert f"amago: sized by {' '.join(flags)}" in result.stderr
    config = _config_of(result.stdout)
    ExperimentConfig.model_validate(config)  # what was printed is a config that runs, checks included
    assert config["replay"]["traj_save_len"] >= config["run"]["max_seq_len"]
    if flags != ["--smoke"]:
        _check_honest(env_id, config, result.stderr)
    return config


def _check_honest(env_id: str, config: dict[str, Any], stderr: str) -> None:
    """A sized run validates twice after learning starts (epoch 0's pass is the untrained policy's), and a
    context shorter than the preset's is said in a warning line."""
    sched = config["schedule"]
    if sched["val_interval"] and sched["val_timesteps_per_epoch"]:
        val_epochs = range(0, sched["epochs"], sched["val_interval"])
        assert sum(epoch > sched["start_learning_at_epoch"] for epoch in val_epochs) >= 2, sched
    preset = resolve_config([], {"env": env_id}, []).run.max_seq_len
    if config["run"]["max_seq_len"] < preset:
        assert "amago: warning: " in stderr, stderr
        assert str(preset) in stderr, stderr


@pytest.mark.slow
@pytest.mark.parametrize("env_id", EVERY_ENV_ID)
def test_a_wall_time_budget_sizes_every_preset(env_id, fake_machine):
    # 15 minutes: a sized run validates at epoch 0 and twice after learning starts, each pass at least one whole
    # episode, and ALE's 21,600-step episodes make that floor alone more than 10 minutes on the fake machine.
    config = _check_sized(env_id, ["--budget", "15m"])
    [(probe, costs)] = fake_machine
    assert probe.replay.traj_save_len >= probe.run.max_seq_len
    assert probe.run.max_seq_len <= calibrate.PROBE_STEPS_CAP
    assert 0 < config["schedule"]["max_minutes"] < 15
    sized = ExperimentConfig.model_validate(config)
    assert 0.5 * 900 * SAFETY <= estimated_seconds(sized, costs) <= 900 * SAFETY  # fits, and uses the budget


@pytest.mark.slow
@pytest.mark.parametrize("env_id", EVERY_ENV_ID)
def test_an_env_step_budget_sizes_every_preset(env_id):
    config = _check_sized(env_id, ["--steps", "200k"])
    sched = config["schedule"]
    total = sched["epochs"] * sched["train_timesteps_per_epoch"] * config["rollout"]["parallel_actors"]
    assert total == pytest.approx(200_000, rel=0.1)  # "about": whole epochs of whole steps per actor


@pytest.mark.slow
@pytest.mark.parametrize("env_id", EVERY_ENV_ID)
def test_smoke_reaches_the_end_of_an_episode_of_every_preset_that_it_can(env_id):
    # An episode longer than SMOKE_LONGEST_EPISODE (or of unknown length) is not played out; the real run then
    # says whether any finished (tests/experiment/test_budget_run.py).
    config = _check_sized(env_id, ["--smoke"])
    episode = resolve_config([], {"env": env_id}, []).component("env").episode_steps()
    sched = config["schedule"]
    per_actor = sched["epochs"] * sched["train_timesteps_per_epoch"]
    if config["rollout"]["env_mode"] == "already_vectorized":  # one batch row per actor, or the pool refuses
        assert config["env"]["num_envs"] == config["rollout"]["parallel_actors"]
    if episode is not None and episode <= SMOKE_LONGEST_EPISODE:
        assert per_actor > episode
    else:
        assert per_actor == SMOKE_STEPS_PER_ACTOR


@pytest.mark.slow
def test_the_real_calibration_times_a_window_longer_than_its_files():
    # key-door trains on whole 500-step episodes; the probe collects at most PROBE_STEPS_CAP steps, so it times a
    # shorter window. Small batch and few actors keep the real measurement to seconds.
    flags = ["-o", "run.torch_threads=1", "-o", "optim.batch_size=2", "-o", "rollout.parallel_actors=2"]
    result = runner.invoke(app, ["run", "--env", "key-door", "--budget", "2m", "--dry-run", *flags])
    assert result.exit_code == 0, result.output
    config = _config_of(result.stdout)
    assert config["replay"]["traj_save_len"] >= config["run"]["max_seq_len"]
    assert 0 < config["schedule"]["max_minutes"] < 2
    assert "ms per update" in result.stderr
