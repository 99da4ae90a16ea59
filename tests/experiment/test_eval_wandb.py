"""`amago eval` on a run trained with wandb: the training's wandb run gets the test metrics, or they stay local.

Never an API key, never a network: wandb runs offline here, and HOME points at an empty folder (no .netrc).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.config.sources import load_config
from amago_core.experiment import Experiment
from amago_wandb.backend import RUN_RECORD

wandb = pytest.importorskip("wandb")
runner = CliRunner()
TEST_KEY = "test/Average Total Return (Across All Env Names)"


@pytest.fixture
def no_wandb_account(tmp_path, monkeypatch):
    """No API key anywhere, wandb quiet, and wandb's session settings forgotten before and after."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    wandb.teardown()  # wandb keeps the first mode it saw for the whole process
    yield
    wandb.teardown()


@pytest.fixture
def trained(tiny_job, tmp_path, monkeypatch, no_wandb_account) -> Path:
    """A tiny run trained with wandb in offline mode; returns its folder (wandb's mode is unset again)."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    tiny_job["logging"].update(log_to_wandb=True, wandb_project="amago-tests", plot=False)
    tiny_job["schedule"]["epochs"] = 2
    experiment = Experiment(load_config(base=tiny_job, environ={}))
    experiment.start()
    try:
        experiment.learn()
    finally:
        experiment.close()
    monkeypatch.delenv("WANDB_MODE")
    wandb.teardown()
    return experiment.paths.root


def offline_runs(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "wandb").glob("offline-run-*"))


def run_id_of(offline_run: Path) -> str:
    """The wandb run id in an offline folder's name (wandb adds ``-1`` when a name of that second exists)."""
    match = re.fullmatch(r"offline-run-\d{8}_\d{6}-([a-z0-9]+)(-\d+)?", offline_run.name)
    assert match, offline_run.name
    return match.group(1)


@pytest.mark.slow
def test_training_records_its_wandb_run(trained):
    record = json.loads((trained / RUN_RECORD).read_text())
    (offline,) = offline_runs(trained)
    assert run_id_of(offline) == record["id"]
    assert record["project"] == "amago-tests"
    assert record["mode"] == "offline"


def test_eval_without_an_api_key_writes_locally_and_says_so_in_one_line(trained):
    result = runner.invoke(app, ["eval", str(trained), "--episodes", "2"])
    assert result.exit_code == 0, result.output
    assert "Average Total Return in TMaze-Passive-H3" in json.loads(result.stdout)
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("amago:")]
    assert "no wandb API key" in warning
    assert "metrics.jsonl only" in warning
    assert len(offline_runs(trained)) == 1  # no wandb run was opened
    records = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    evaluated = records[-1]
    assert TEST_KEY in evaluated
    assert (evaluated["Epoch"], evaluated["gradient_steps"]) == (1, 8)  # the x-axes of the weights evaluated


@pytest.mark.slow
def test_offline_eval_adds_test_metrics_and_videos_to_the_same_run(trained, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    run_id = json.loads((trained / RUN_RECORD).read_text())["id"]
    result = runner.invoke(app, ["eval", str(trained), "--video", "--video-format", "gif"])
    assert result.exit_code == 0, result.output
    assert not [line for line in result.stderr.splitlines() if line.startswith("amago:")]
    training, evaluation = offline_runs(trained)
    assert run_id_of(training) == run_id
    assert run_id_of(evaluation) == run_id  # resumed: the same id, in a folder `wandb sync` merges
    assert (evaluation / f"run-{run_id}.wandb").is_file()
    assert list((evaluation / "files" / "media" / "videos" / "test").glob("videos_*.gif"))
    assert json.loads((trained / RUN_RECORD).read_text())["id"] == run_id


def test_eval_with_wandb_not_installed_writes_locally_and_says_so(trained, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` fails
    result = runner.invoke(app, ["eval", str(trained), "--episodes", "2"])
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("amago:")]
    assert "wandb is not installed (pip install amago-wandb)" in warning
    assert len(offline_runs(trained)) == 1
    assert TEST_KEY in json.loads((trained / "metrics.jsonl").read_text().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "change", "said"),
    [
        ("disabled", None, "WANDB_MODE=disabled"),
        ("offline", "forget the record", f"{RUN_RECORD} is missing"),
    ],
)
def test_eval_says_why_wandb_is_not_used(trained, monkeypatch, tmp_path, mode, change, said):
    monkeypatch.setenv("WANDB_MODE", mode)
    run_dir = tmp_path / "copy" / "tiny"
    shutil.copytree(trained, run_dir)
    if change == "forget the record":
        (run_dir / RUN_RECORD).unlink()
    result = runner.invoke(app, ["eval", str(run_dir), "--episodes", "2"])
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("amago:")]
    assert said in warning
    assert len(offline_runs(run_dir)) == 1


def test_training_that_asks_for_wandb_without_it_stops_in_one_line(tiny_job, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)
    tiny_job["logging"].update(log_to_wandb=True)
    config_file = tmp_path / "job.json"
    config_file.write_text(json.dumps(tiny_job))
    result = runner.invoke(app, ["run", "-c", str(config_file), "--quiet"])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "pip install amago-wandb" in result.stderr
    assert not (tmp_path / "runs" / "tiny" / "ckpts").exists()  # stopped before training


def _without_amago_wandb(monkeypatch) -> None:
    """As if the amago-wandb plugin were not installed: no metadata, and its hook module not loaded."""
    import importlib.metadata

    from amago_core.hooks.manager import reset_hook_manager

    real_version = importlib.metadata.version

    def version(name: str) -> str:
        if name == "amago-wandb":
            raise importlib.metadata.PackageNotFoundError(name)
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setenv("AMAGO_BLOCK_PLUGINS", "amago-wandb")
    reset_hook_manager()


def test_training_that_asks_for_wandb_without_its_plugin_stops_in_one_line(tiny_job, tmp_path, monkeypatch):
    from amago_core.hooks.manager import reset_hook_manager
    from amago_core.plugins.registry import reset_registries

    _without_amago_wandb(monkeypatch)
    reset_registries()
    tiny_job["logging"].update(log_to_wandb=True)
    config_file = tmp_path / "job.json"
    config_file.write_text(json.dumps(tiny_job))
    try:
        result = runner.invoke(app, ["run", "-c", str(config_file), "--quiet"])
    finally:
        monkeypatch.undo()
        reset_registries()
        reset_hook_manager()
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "amago: error: logging.log_to_wandb is true but amago-wandb is not installed: pip install amago-wandb, "
        "or set logging.log_to_wandb=false. No checkpoint was written yet."
    )
    assert not (tmp_path / "runs" / "tiny" / "ckpts").exists()  # stopped before training


@pytest.mark.slow
def test_eval_of_a_wandb_run_without_its_plugin_writes_locally_and_says_so(trained, monkeypatch):
    from amago_core.hooks.manager import reset_hook_manager
    from amago_core.plugins.registry import reset_registries

    _without_amago_wandb(monkeypatch)
    reset_registries()
    try:
        result = runner.invoke(app, ["eval", str(trained), "--episodes", "2"])
    finally:
        monkeypatch.undo()
        reset_registries()
        reset_hook_manager()
    assert result.exit_code == 0, result.output
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("amago:")]
    assert warning == (
        "amago: warning: the run was trained with wandb, but amago-wandb is not installed (pip install "
        f"amago-wandb); test metrics written to {trained / 'metrics.jsonl'} only"
    )
    assert TEST_KEY in json.loads((trained / "metrics.jsonl").read_text().splitlines()[-1])
