"""`amago run --budget / --steps / --smoke` end to end, and the loop's wall-time limit (`schedule.max_minutes`)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.experiment import Experiment
from amago_core.experiment.metrics import AVERAGE_RETURN_KEY
from amago_core.experiment.signals import TIME_LIMIT

runner = CliRunner()


def _json_of(output: str) -> dict:
    return json.loads(output[output.index("{") :])


@pytest.mark.slow
def test_smoke_runs_a_full_size_preset_end_to_end_in_a_temporary_folder(tmp_path):
    result = runner.invoke(
        app, ["run", "--env", "frozen-lake", "--smoke", "-o", f"run.ckpt_base_dir={tmp_path}"]
    )
    assert result.exit_code == 0, result.output
    summary = _json_of(result.stdout)
    assert summary["epochs"] == 2
    assert summary["gradient_steps"] > 0
    assert summary["final_test"] is not None
    assert "smoke run passed end to end" in result.stderr
    assert not list(tmp_path.iterdir())  # the smoke run used (and removed) a temporary folder


@pytest.mark.slow
def test_smoke_on_popgym_finishes_episodes_and_names_no_path_it_removes(tmp_path):
    result = runner.invoke(
        app, ["run", "--env", "popgym-count-recall-easy", "--smoke", "-o", f"run.ckpt_base_dir={tmp_path}"]
    )
    assert result.exit_code == 0, result.output
    summary = _json_of(result.stdout)
    finished = summary["episodes_finished"]
    assert min(finished.values()) >= 1, finished  # train, val and test
    assert "finished no episode" not in result.stderr
    # The temporary folder is gone when the summary is read: no path into it is printed.
    assert "amago-smoke-" not in result.stdout
    assert not {"run_dir", "plots", "checkpoint"} & summary.keys()


@pytest.mark.slow
def test_smoke_says_when_its_episodes_are_longer_than_it_plays(tmp_path):
    # Multi-domain POPGym draws its games at random and some end within 16 steps: seed 1 draws long ones only.
    result = runner.invoke(
        app,
        [
            "run",
            "--env",
            "popgym-multidomain",
            "--smoke",
            "--seed",
            "1",
            "-o",
            f"run.ckpt_base_dir={tmp_path}",
        ],
    )
    assert result.exit_code == 0, result.output
    assert _json_of(result.stdout)["episodes_finished"] == {"train": 0, "val": 0, "test": 0}
    assert "the smoke run finished no episode of popgym-multidomain" in result.stderr


def test_steps_dry_run_shows_the_sized_schedule():
    result = runner.invoke(app, ["run", "--env", "key-door", "--steps", "60k", "--dry-run"])
    assert result.exit_code == 0, result.output
    config = _json_of(result.stdout)
    sched = config["schedule"]
    assert (
        sched["epochs"] * sched["train_timesteps_per_epoch"] * config["rollout"]["parallel_actors"] >= 60_000
    )
    assert "amago: sized by --steps 60k:" in result.stderr


def test_budget_measures_this_machine_and_sets_the_time_limit():
    result = runner.invoke(app, ["run", "--budget", "2m", "--dry-run", "-o", "run.torch_threads=1"])
    assert result.exit_code == 0, result.output
    config = _json_of(result.stdout)
    assert 0 < config["schedule"]["max_minutes"] < 2
    assert "ms per update" in result.stderr


def test_budget_flags_refuse_bad_input_in_one_line(tmp_path):
    cases = [
        (["--steps", "lots"], "write it like 200000, 200k or 1.5M"),
        (["--budget", "soon"], "write it like 90s, 10m or 1.5h"),
        (["--steps", "10k", "--smoke"], "pass one of them"),
        (["--resume", str(tmp_path), "--smoke"], "cannot resume"),
    ]
    for flags, message in cases:
        result = runner.invoke(app, ["run", *flags, "--dry-run"])
        assert result.exit_code == 2, (flags, result.output)
        assert message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_the_time_limit_stops_the_loop_like_a_signal_and_the_run_still_finishes(tiny_job):
    tiny_job["schedule"] = {**tiny_job["schedule"], "epochs": 50, "max_minutes": 0.0005}
    experiment = Experiment(tiny_job)
    experiment.start()
    try:
        experiment.learn()
    finally:
        experiment.close()
    assert experiment.stopped_by == TIME_LIMIT
    assert experiment.epoch <= 2  # stopped within the first epochs, with its state saved like after a signal


def test_the_test_pass_after_the_time_limit_runs_whole(tiny_job):
    # The time limit bounds the training loop; the budget leaves time for the test pass, which must not be cut.
    tiny_job["schedule"] = {**tiny_job["schedule"], "epochs": 50, "max_minutes": 0.0005}
    experiment = Experiment(tiny_job)
    experiment.start()
    try:
        experiment.learn()
        final = experiment.evaluate_test(experiment.make_test_env, 8)
    finally:
        experiment.close()
    assert experiment.stopped_by == TIME_LIMIT
    assert AVERAGE_RETURN_KEY in final  # episodes finished: the pass was not stopped at its first step
