"""`amago doctor RUN_DIR`: a run folder's disk use by part (issue 18, item 3)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app

runner = CliRunner()

PARTS = [
    "training states",
    "policy weights",
    "rolling state",
    "buffer files",
    "quarantine",
    "metrics",
    "plots",
    "videos",
    "wandb",
    "other",
]


def _disk_bytes(folder: Path) -> tuple[int, int]:
    """Bytes on disk (allocated blocks) and file count under ``folder``, links not followed."""
    total = files = 0
    for root, _, names in os.walk(folder):
        for name in names:
            total += os.lstat(Path(root) / name).st_blocks * 512
            files += 1
    return total, files


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """A real run of the main job: two epochs, a kept checkpoint each, no plots."""
    base = tmp_path_factory.mktemp("runs")
    amago = shutil.which("amago", path=str(Path(sys.executable).parent)) or shutil.which("amago")
    assert amago is not None, "the `amago` console script is not installed; run `uv sync --all-packages`"
    result = subprocess.run(
        [
            amago,
            "run",
            "--quiet",
            "--name",
            "tiny",
            "-o",
            f"run.ckpt_base_dir={base}",
            "-o",
            "schedule.epochs=2",
            "-o",
            "schedule.ckpt_interval=1",
            "-o",
            "logging.plot=false",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    run_dir = base / "tiny"
    quarantine = run_dir / "buffer" / "quarantine"
    quarantine.mkdir()
    (quarantine / "TMaze_deadbeef_1.0.npz").write_bytes(b"x" * 10_000)
    return run_dir


def _parts(output: str) -> dict[str, dict]:
    return {part["part"]: part for part in json.loads(output)["parts"]}


@pytest.mark.slow
def test_doctor_shows_a_real_run_folder_by_part(tiny_run):
    result = runner.invoke(app, ["doctor", str(tiny_run), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    parts = _parts(result.stdout)
    assert list(parts) == PARTS
    ckpts = tiny_run / "ckpts"
    assert (parts["training states"]["bytes"], parts["training states"]["files"]) == _disk_bytes(
        ckpts / "training_states"
    )
    assert (parts["policy weights"]["bytes"], parts["policy weights"]["files"]) == _disk_bytes(
        ckpts / "policy_weights"
    )
    assert (parts["rolling state"]["bytes"], parts["rolling state"]["files"]) == _disk_bytes(ckpts / "latest")
    assert parts["training states"]["files"] > 0
    assert parts["policy weights"]["files"] == 2
    trajectories = len(list((tiny_run / "buffer" / "fifo").glob("*.npz")))
    assert trajectories > 0
    assert parts["buffer files"]["files"] == trajectories
    assert parts["quarantine"]["files"] == 1
    assert parts["quarantine"]["bytes"] >= 10_000
    assert parts["metrics"]["files"] == 1
    assert parts["metrics"]["bytes"] > 0
    assert parts["plots"]["files"] == parts["videos"]["files"] == parts["wandb"]["files"] == 0
    assert parts["other"]["files"] == 3  # config.resolved.json, spaces.json, task_split.json
    assert parts["training states"]["bound"] == "newest 2 (schedule.keep_states)"
    assert "replay.dset_max_size" in parts["buffer files"]["bound"]
    # Every file is counted once: the parts add up to the whole folder.
    assert (report["bytes"], report["files"]) == _disk_bytes(tiny_run)
    assert sum(p["bytes"] for p in parts.values()) == report["bytes"]


def test_doctor_prints_the_parts_with_sizes(tiny_run):
    result = runner.invoke(app, ["doctor", str(tiny_run)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert f"disk use of {tiny_run}" in result.stdout
    rows = {line.strip().split("  ")[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert set(PARTS) <= set(rows)
    assert " MB " in rows["training states"]
    assert "schedule.keep_states" in rows["training states"]
    assert " kB " in rows["quarantine"]


def test_doctor_counts_a_buffer_outside_the_run_folder_where_it_is(tmp_path):
    run_dir = tmp_path / "runs" / "elsewhere"
    run_dir.mkdir(parents=True)
    buffers = tmp_path / "buffers"
    config = {"run": {"name": "elsewhere"}, "replay": {"dset_root": str(buffers), "dset_name": "shared"}}
    (run_dir / "config.resolved.json").write_text(json.dumps(config))
    fifo = buffers / "shared" / "buffer" / "fifo"
    fifo.mkdir(parents=True)
    for i in range(3):
        (fifo / f"env_{i:08x}_{i}.0.npz").write_bytes(b"t" * 5000)
    result = runner.invoke(app, ["doctor", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    parts = _parts(result.stdout)
    assert parts["buffer files"]["files"] == 3
    assert parts["buffer files"]["path"] == str(buffers / "shared" / "buffer")
    assert parts["other"]["files"] == 1
    text = runner.invoke(app, ["doctor", str(run_dir)], env={"COLUMNS": "200"})
    assert f"buffer files and quarantine: {buffers / 'shared' / 'buffer'}" in text.stdout


def test_doctor_says_in_one_line_when_the_folder_is_no_run(tmp_path):
    result = runner.invoke(app, ["doctor", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert f"{tmp_path} is not an amago run folder" in result.stderr
    missing = runner.invoke(app, ["doctor", str(tmp_path / "missing")])
    assert missing.exit_code == 2
    assert "is not an amago run folder" in missing.stderr
