"""A long run says how long it takes before it trains: `--dry-run` (its floor, not measured) and, from Python,
`Experiment.start()` in one line; a short run says nothing, and `amago run`'s own estimate is not repeated."""

from __future__ import annotations

import copy

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_tools.sizing import estimate

FLOOR_WORDS = "this run needs at least"


def test_a_dry_run_of_a_long_preset_says_its_floor():
    result = CliRunner().invoke(app, ["run", "--env", "metaworld-ml45", "--dry-run"])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.stderr.splitlines() if FLOOR_WORDS in line]
    assert "1,000 epochs x 1,000 steps x 12 actors" in line
    assert "--budget or --steps size it" in line


def test_a_dry_run_of_the_main_job_says_nothing_of_time():
    result = CliRunner().invoke(app, ["run", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert FLOOR_WORDS not in result.stderr


@pytest.fixture
def long_job(tmp_path):
    from amago.default_job import DEFAULT_JOB

    job = copy.deepcopy(DEFAULT_JOB)
    job["schedule"]["epochs"] = 100_000  # 1.1 M updates: hours even at the floor's speed
    job["run"].update(ckpt_base_dir=str(tmp_path), name="long", torch_threads=1)
    job["rollout"]["parallel_actors"] = 2
    return job


def _start_and_close(job, capsys):
    import amago
    from amago_core.config.sources import load_config

    experiment = amago.Experiment(load_config(base=job, environ={}))
    experiment.start()
    experiment.close()
    return capsys.readouterr().err


def test_experiment_start_from_python_says_the_floor_of_a_long_run(long_job, capsys, monkeypatch):
    monkeypatch.setattr(estimate, "_cli_estimated", False)
    lines = [line for line in _start_and_close(long_job, capsys).splitlines() if FLOOR_WORDS in line]
    assert len(lines) == 1
    assert "100,000 epochs x 11 steps x 2 actors" in lines[0]


def test_start_adds_nothing_after_amago_runs_own_estimate(long_job, capsys, monkeypatch):
    monkeypatch.setattr(estimate, "_cli_estimated", False)
    estimate.estimated_by_the_cli()
    assert FLOOR_WORDS not in _start_and_close(long_job, capsys)


def test_a_quiet_run_from_python_says_nothing(long_job, capsys, monkeypatch):
    monkeypatch.setattr(estimate, "_cli_estimated", False)
    long_job["logging"] = {**long_job.get("logging", {}), "verbose": False}
    assert FLOOR_WORDS not in _start_and_close(long_job, capsys)
