"""Offline RL from a protected buffer, then offline -> online; wandb logging without a network."""

from __future__ import annotations

import json
import shutil

import pytest


def test_offline_from_protected_then_online(tiny_job, tmp_path, run_job):
    source = run_job(tiny_job, epochs=2)
    demos = sorted((source.paths.root / "buffer" / "fifo").glob("*.npz"))
    assert demos

    job = json.loads(json.dumps(tiny_job))
    job["run"]["name"] = "offline"
    protected = tmp_path / "runs" / "offline" / "buffer" / "protected"
    protected.mkdir(parents=True)
    for demo in demos:
        shutil.copy(demo, protected / demo.name)

    offline = run_job(job, epochs=2, start_collecting_at_epoch=10, dset_max_size=1)
    assert offline.total_frames == 0  # collection off: learned only from the protected files
    assert offline.grad_update_counter == 2 * 4
    assert sorted(p.name for p in protected.iterdir()) == sorted(d.name for d in demos)  # never deleted

    # A new run on the same buffer (a fresh run never reuses a run's folder; the buffer is shared by name).
    online_job = {**job, "run": {**job["run"], "name": "online"}}
    online = run_job(online_job, epochs=3, start_collecting_at_epoch=1, dset_max_size=1, dset_name="offline")
    assert online.total_frames == 2 * 8 * 4  # epochs 1 and 2 collected
    fifo = tmp_path / "runs" / "offline" / "buffer" / "fifo"
    assert len(list(fifo.glob("*.npz"))) == 1  # FIFO trimmed to dset_max_size
    assert sorted(p.name for p in protected.iterdir()) == sorted(d.name for d in demos)


@pytest.mark.slow
def test_wandb_logs_offline_without_network(tiny_job, tmp_path, monkeypatch, run_job):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    job = json.loads(json.dumps(tiny_job))
    job["logging"].update(log_to_wandb=True, wandb_project="amago-tests")
    experiment = run_job(job, epochs=1)
    run_dirs = list((experiment.paths.root / "wandb").glob("offline-run-*"))
    assert len(run_dirs) == 1
    assert list(run_dirs[0].glob("*.wandb"))
    assert (experiment.paths.root / "metrics.jsonl").is_file()  # the local log stays on beside wandb
