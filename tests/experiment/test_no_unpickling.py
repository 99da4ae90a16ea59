"""Reading a run folder never runs code from it: pickles planted everywhere a run folder is read stay unread.

Each planted pickle, when unpickled, creates a marker file. `--resume`, `eval`, `plot`, an offline run from the
protected buffer and a YAML config with a python tag must all leave the marker absent, and say what they refused.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.data.disk_buffer import PickledTrajFileWarning

runner = CliRunner()


class _Bomb:
    """Unpickling it touches the marker file (what a malicious pickle could do instead: anything)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _plant(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(_Bomb(marker)))


@pytest.fixture
def booby_trapped_run(tiny_job, tmp_path):
    """A finished tiny run with pickles planted in its training states, buffer, weights folders and beside it."""
    config_file = tmp_path / "tiny.json"
    config_file.write_text(json.dumps(tiny_job))
    result = runner.invoke(app, ["run", "-c", str(config_file), "-o", "schedule.epochs=2", "--quiet"])
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "runs" / "tiny"
    marker = tmp_path / "PWNED"
    ckpts = run_dir / "ckpts"
    for state in [*ckpts.glob("training_states/*"), *ckpts.glob("latest/state_epoch_*")]:
        for name in ("random_states_0.pkl", "optimizer.bin", "scheduler.bin", "custom_checkpoint_0.pkl"):
            _plant(state / name, marker)
    # The newest "checkpoint": accelerate's pickle layout, as an older or a tampered run folder would hold.
    foreign = ckpts / "training_states" / "tiny_epoch_99"
    for name in ("optimizer.bin", "random_states_0.pkl", "model.safetensors"):
        _plant(foreign / name, marker)
    (foreign / "progress.json").write_text(
        json.dumps({"epoch": 99, "grad_update_counter": 0, "total_frames": 0, "frames_by_env_name": {}})
    )
    _plant(ckpts / "latest" / "policy.pt", marker)
    _plant(ckpts / "policy_weights" / "policy_epoch_1.pt", marker)
    buffer = run_dir / "buffer"
    _plant(buffer / "fifo" / "TMazePassiveH3_deadbeef_1.0.traj", marker)
    _plant(buffer / "protected" / "TMazePassiveH3_cafebabe_2.0.traj", marker)
    # An .npz whose array is an object array: reading it would unpickle.
    np.savez(
        buffer / "protected" / "TMazePassiveH3_0badf00d_3.0.npz", obs=np.array([_Bomb(marker)], dtype=object)
    )
    return run_dir, config_file, marker


@pytest.mark.slow
def test_resume_eval_plot_and_offline_never_unpickle(booby_trapped_run, tmp_path):
    run_dir, config_file, marker = booby_trapped_run

    with pytest.warns(PickledTrajFileWarning, match=r"2 \.traj file\(s\) .* were left unread"):
        resumed = runner.invoke(app, ["run", "--resume", str(run_dir), "-o", "schedule.epochs=3", "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    assert "skipping the checkpoint of epoch 99" in resumed.stderr
    assert "holds pickle files" in resumed.stderr
    assert "resuming after epoch 1" in resumed.stderr
    assert not marker.exists()

    evaluated = runner.invoke(app, ["eval", str(run_dir), "--episodes", "2"])
    assert evaluated.exit_code == 0, evaluated.output
    plotted = runner.invoke(app, ["plot", str(run_dir)])
    assert plotted.exit_code == 0, plotted.output
    assert not marker.exists()

    # Offline: a new run that only trains on the protected buffer (the trapped .npz and .traj included).
    offline = runner.invoke(
        app,
        [
            "run", "-c", str(config_file), "--name", "offline", "--quiet",
            "-o", f"replay.dset_root={run_dir.parent}", "-o", "replay.dset_name=tiny",
            "-o", "schedule.epochs=2", "-o", "schedule.start_collecting_at_epoch=2",
        ],
    )  # fmt: skip
    assert offline.exit_code == 0, offline.output
    assert not marker.exists()
    quarantined = run_dir / "buffer" / "quarantine" / "TMazePassiveH3_0badf00d_3.0.npz"
    assert quarantined.is_file()  # refused (object array) and moved aside, not deleted


def test_a_yaml_config_with_a_python_tag_is_refused(tmp_path):
    marker = tmp_path / "PWNED"
    evil = tmp_path / "evil.yaml"
    evil.write_text(f"run:\n  name: !!python/object/apply:pathlib.Path.touch ['{marker}']\n")
    result = runner.invoke(app, ["run", "-c", str(evil), "--dry-run"])
    assert result.exit_code == 2
    assert "is not valid YAML" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not marker.exists()
