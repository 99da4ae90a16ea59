"""Checkpoint retention: a long run keeps the newest states and weights (plus every K-th), never the one it needs."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from amago_core.config.sources import load_config
from amago_core.experiment import Experiment
from amago_core.experiment.checkpoints import CheckpointStore
from amago_core.experiment.run_dir import PROGRESS_FILE, RunPaths, kept_epochs


def _job(tiny_job: dict[str, Any], **schedule: Any) -> dict[str, Any]:
    tiny_job["schedule"] = {**tiny_job["schedule"], **schedule}
    tiny_job["logging"] = {**tiny_job["logging"], "plot": False}
    return tiny_job


def _state_epochs(paths: RunPaths) -> list[int]:
    return sorted(int(p.name.rsplit("_", 1)[1]) for p in paths.training_states.iterdir())


def _policy_epochs(paths: RunPaths) -> list[int]:
    return [epoch for epoch, _ in paths.saved_policies()]


def _fake_state(folder: Path, epoch: int, *, complete: bool = True) -> Path:
    """A state folder with amago's file names (retention counts only states that look loadable)."""
    state = folder / f"run_epoch_{epoch}"
    state.mkdir(parents=True)
    for name in ("model.safetensors", "optimizer.json", "scheduler.json"):
        (state / name).write_bytes(b"{}")
    if complete:
        progress = {"epoch": epoch, "grad_update_counter": 0, "total_frames": 0, "frames_by_env_name": {}}
        (state / PROGRESS_FILE).write_text(json.dumps(progress))
    return state


def _store(paths: RunPaths, *, main: bool = True) -> CheckpointStore:
    accelerator = SimpleNamespace(is_main_process=main, num_processes=1, process_index=0 if main else 1)
    return CheckpointStore(accelerator, paths)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("newest", "every", "kept"),
    [
        (2, None, {8, 9}),
        (2, 4, {0, 4, 8, 9}),
        (None, None, set(range(10))),
        (None, 4, set(range(10))),
        (20, None, set(range(10))),
        (1, 3, {0, 3, 6, 9}),
    ],
)
def test_the_rule_keeps_the_newest_n_and_every_kth(newest, every, kept):
    assert kept_epochs(range(10), newest, every) == kept


@pytest.mark.slow
def test_a_long_run_keeps_exactly_the_newest_states_and_weights_plus_every_kth(tiny_job, run_job):
    job = _job(
        tiny_job,
        epochs=8,
        ckpt_interval=1,
        keep_states=2,
        keep_state_every=3,
        keep_policies=3,
        keep_policy_every=4,
    )
    paths = run_job(job).paths
    assert _state_epochs(paths) == [0, 3, 6, 7]  # the newest 2, plus multiples of 3
    assert _policy_epochs(paths) == [0, 4, 5, 6, 7]  # the newest 3, plus multiples of 4
    assert [p.name for p in paths.rolling_state(7).parent.glob("state_epoch_*")] == ["state_epoch_7"]
    assert not list(paths.ckpts.rglob(".*"))  # no temp or half-written folder left


def test_none_keeps_every_policy_and_the_interval_still_applies(tiny_job, run_job):
    job = _job(tiny_job, epochs=6, ckpt_interval=2, keep_states=1, keep_policies=None)
    paths = run_job(job).paths
    assert _policy_epochs(paths) == [0, 2, 4]
    assert _state_epochs(paths) == [4]


def test_an_incomplete_newer_state_never_pushes_out_the_complete_one(tmp_path):
    paths = RunPaths(tmp_path, "run")
    for epoch in (1, 2):
        _fake_state(paths.training_states, epoch)
    incomplete = _fake_state(paths.training_states, 3, complete=False)  # a copy that stopped half-way
    stale = paths.training_states / ".run_epoch_4.incoming"  # a save that a kill cut short
    stale.mkdir()
    removed = _store(paths).prune_states(newest=1, every=None)
    assert sorted(p.name for p in removed) == [".run_epoch_4.incoming", "run_epoch_1"]
    assert paths.saved_epochs() == [2]  # the newest complete state: what a resume loads
    assert incomplete.is_dir()  # not ours to delete, and never counted


def test_only_the_main_process_prunes(tmp_path):
    paths = RunPaths(tmp_path, "run")
    for epoch in range(4):
        _fake_state(paths.training_states, epoch)
        paths.policy_weights.mkdir(parents=True, exist_ok=True)
        paths.policy_at(epoch).write_bytes(b"weights")
    other = _store(paths, main=False)
    assert other.prune_states(newest=1, every=None) == []
    assert other.prune_policies(newest=1, every=None) == []
    assert paths.saved_epochs() == [0, 1, 2, 3]
    assert _policy_epochs(paths) == [0, 1, 2, 3]
    _store(paths).prune_policies(newest=1, every=None)
    assert _policy_epochs(paths) == [3]


def test_resume_after_pruning_and_a_smaller_keep_shrinks_the_folder_on_the_next_save(tiny_job, run_job):
    job = _job(tiny_job, epochs=4, ckpt_interval=1, keep_states=4, keep_policies=4, rolling_state=False)
    first = run_job(job)
    assert _state_epochs(first.paths) == [0, 1, 2, 3]
    job = _job(job, epochs=6, keep_states=2, keep_policies=2)
    resumed = Experiment(load_config(base=job, environ={}))
    resumed.start(resume=True)
    try:
        assert resumed.epoch == 4  # continued after the newest complete state
        resumed.learn()
    finally:
        resumed.close()
    assert _state_epochs(resumed.paths) == [4, 5]
    assert _policy_epochs(resumed.paths) == [4, 5]
    again = Experiment(load_config(base=_job(job, epochs=7), environ={}))
    again.start(resume=True)
    try:
        assert again.epoch == 6  # the pruned folder still resumes
    finally:
        again.close()
