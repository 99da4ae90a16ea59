"""Retention counts only states amago can load, by the epoch their progress file records; a kill during a
weights write never leaves a kept state without its weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import TINY, amago, snapshot

from amago_core.experiment.checkpoints import CheckpointStore
from amago_core.experiment.run_dir import PROGRESS_FILE, RunPaths


def _store(paths: RunPaths) -> CheckpointStore:
    accelerator = SimpleNamespace(is_main_process=True, num_processes=1, process_index=0)
    return CheckpointStore(accelerator, paths)  # type: ignore[arg-type]


def _state(folder: Path, name: str, epoch: int) -> Path:
    """A state folder with amago's files (what retention takes for loadable)."""
    state = folder / name
    state.mkdir(parents=True)
    for file in ("model.safetensors", "optimizer.json", "scheduler.json"):
        (state / file).write_bytes(b"{}")
    progress = {"epoch": epoch, "grad_update_counter": 0, "total_frames": 0, "frames_by_env_name": {}}
    (state / PROGRESS_FILE).write_text(json.dumps(progress))
    return state


def test_a_planted_pickle_state_never_counts_among_the_newest_kept(tmp_path):
    paths = RunPaths(tmp_path, "run")
    for epoch in (1, 2):
        _state(paths.training_states, f"run_epoch_{epoch}", epoch)
    # AMAGO's pickle layout (accelerate's files), never loaded: it must not push epoch 2 out of keep_states=1.
    planted = paths.training_states / "run_epoch_99"
    planted.mkdir()
    (planted / "pytorch_model.bin").write_bytes(b"\x80\x04 pickle")
    (planted / "optimizer.bin").write_bytes(b"\x80\x04 pickle")
    (planted / PROGRESS_FILE).write_text(json.dumps({"epoch": 99}))
    before = snapshot(planted)
    removed = _store(paths).prune_states(newest=1, every=None)
    assert [p.name for p in removed] == ["run_epoch_1"]
    assert (paths.training_states / "run_epoch_2").is_dir()
    assert snapshot(planted) == before  # not amago's to count, nor to delete


def test_a_forged_folder_name_epoch_is_ordered_by_its_progress_file(tmp_path):
    paths = RunPaths(tmp_path, "run")
    _state(paths.training_states, "run_epoch_5", 5)
    _state(paths.training_states, "run_epoch_6", 6)
    forged = _state(paths.training_states, "run_epoch_999", 1)  # an old state renamed to look newest
    assert paths.saved_states()[0] == (1, forged)
    assert paths.saved_epochs() == [1, 5, 6]
    removed = _store(paths).prune_states(newest=2, every=None)
    assert removed == [forged]  # the oldest by its record goes, not epoch 5
    assert sorted(p.name for p in paths.training_states.iterdir()) == ["run_epoch_5", "run_epoch_6"]


KILLED_IN_WEIGHTS_WRITE = """
import os, signal, sys
from pathlib import Path
from amago_core.experiment import checkpoints

original = checkpoints.save_model

def killed_midway(model, filename, *args, **kwargs):
    if "policy_epoch_1" in filename:  # the temp file of epoch 1's weights
        Path(filename).write_bytes(b"\\x00" * 64)  # half written...
        os.kill(os.getpid(), signal.SIGKILL)  # ...when the machine goes away
    return original(model, filename, *args, **kwargs)

checkpoints.save_model = killed_midway
from amago_core.cli.app import app
sys.argv = ["amago", "run", "-c", sys.argv[1], "--name", "killed", "--quiet"]
app()
"""


@pytest.mark.slow
def test_a_sigkill_during_a_weights_write_leaves_no_kept_state_without_weights(tmp_path):
    config = tmp_path / "job.json"
    job = {**TINY, "run": {**TINY["run"], "ckpt_base_dir": str(tmp_path / "runs")}}
    job["schedule"] = {**TINY["schedule"], "epochs": 3}
    config.write_text(json.dumps(job))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_IN_WEIGHTS_WRITE, str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == -9, proc.stderr[-3000:]
    paths = RunPaths(tmp_path / "runs", "killed")
    kept = [epoch for epoch, folder in paths.saved_states() if folder.parent == paths.training_states]
    assert kept == [0]  # epoch 1's state was never written: its weights come first
    for epoch in kept:
        assert paths.policy_at(epoch).is_file()
    # The resume redoes epoch 1 and writes its weights; every kept state then has them.
    resumed = amago("run", "--resume", str(paths.root), "--quiet")
    assert resumed.exit_code == 0, resumed.output
    for epoch, folder in paths.saved_states():
        if folder.parent == paths.training_states:
            assert paths.policy_at(epoch).is_file(), epoch
    assert not list(paths.policy_weights.glob(".*.tmp"))  # the cut temp file went with the next pruning
