"""Exact resume: from the last completed epoch, whatever the folder is called, past damaged checkpoints, with
curves that never run backwards."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amago import Experiment
from amago_core.config.sources import load_config
from amago_core.experiment.run_checkpoints import NoUsableCheckpointError

AMAGO = [sys.executable, "-m", "amago_core.cli.app"]


def _experiment(job: dict, **settings) -> Experiment:
    return Experiment(load_config(base=job, environ={}), **settings)


def _train(job: dict, resume: bool = False, **settings) -> Experiment:
    experiment = _experiment(job, **settings)
    experiment.start(resume=resume)
    try:
        experiment.learn()
    finally:
        experiment.close()
    return experiment


def _records(run_dir: Path, name: str = "metrics.jsonl") -> list[dict]:
    path = run_dir / name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def test_a_rolling_state_is_kept_every_epoch_and_only_the_newest(tiny_job):
    tiny_job["schedule"]["ckpt_interval"] = 100
    experiment = _train(tiny_job, epochs=3)
    latest = experiment.paths.latest_policy.parent
    assert sorted(p.name for p in latest.glob("state_epoch_*")) == ["state_epoch_2"]
    assert experiment.paths.saved_epochs() == [0, 2]  # kept epoch 0 (ckpt_interval) + the rolling one
    state = latest / "state_epoch_2"
    assert {"model.safetensors", "optimizer.json", "scheduler.json", "rng_0.json", "progress.json"} <= {
        p.name for p in state.iterdir()
    }
    assert not [p for p in state.iterdir() if p.suffix in (".pkl", ".bin", ".pt")]  # nothing pickled


def test_resume_continues_the_counters_the_schedule_and_the_optimiser(tiny_job):
    tiny_job["schedule"]["ckpt_interval"] = 100
    first = _train(tiny_job, epochs=2)
    saved_opt = first.optimizer.state_dict()["state"]
    resumed = _experiment(tiny_job, epochs=4)
    resumed.start(resume=True)
    try:
        assert resumed.epoch == 2
        assert (resumed.total_frames, resumed.grad_update_counter) == (
            first.total_frames,
            first.grad_update_counter,
        )
        step = next(iter(resumed.optimizer.state_dict()["state"].values()))["step"]
        assert float(step) == float(next(iter(saved_opt.values()))["step"])
        wrapper = resumed.train_envs.pool.envs[0].env  # SequenceEnv -> the exploration wrapper
        assert wrapper.global_step == first.total_frames // tiny_job["rollout"]["parallel_actors"]
        resumed.learn()
    finally:
        resumed.close()
    epochs = [r["Epoch"] for r in _records(resumed.paths.root)]
    assert epochs == sorted(epochs)
    assert epochs[-1] == 3


def test_the_wall_time_of_the_records_keeps_growing_across_a_resume(tiny_job):
    tiny_job["schedule"]["ckpt_interval"] = 100
    first = _train(tiny_job, epochs=2)
    before = _records(first.paths.root)
    saved = json.loads(next(first.paths.latest_policy.parent.glob("state_epoch_1/progress.json")).read_text())
    assert saved["wall_seconds"] > 0
    resumed = _experiment(tiny_job, epochs=4)
    resumed.start(resume=True)
    try:
        assert resumed.training_wall_seconds == saved["wall_seconds"]  # continued, not restarted at 0
        time.sleep(0.05)
        assert resumed.training_wall_seconds == saved["wall_seconds"]  # only learn() counts
        resumed.learn()
    finally:
        resumed.close()
    records = _records(resumed.paths.root)
    walls = [r["wall_time_seconds"] for r in records]
    assert walls == sorted(walls), "wall time runs backwards in metrics.jsonl"
    assert walls[0] > 0
    after = [r["wall_time_seconds"] for r in records if r["Epoch"] >= 2]
    assert after
    assert min(after) >= saved["wall_seconds"]
    assert max(walls) > max(r["wall_time_seconds"] for r in before)
    assert resumed.training_wall_seconds >= saved["wall_seconds"] + resumed.wall_seconds - 1e-6


def test_a_renamed_run_folder_still_finds_its_checkpoints(tiny_job, tmp_path):
    tiny_job["schedule"]["ckpt_interval"] = 1
    first = _train(tiny_job, epochs=2)
    moved = first.paths.root.with_name("renamed")
    shutil.move(first.paths.root, moved)
    tiny_job["run"]["name"] = "renamed"
    resumed = _experiment(tiny_job, epochs=3)
    resumed.start(resume=True)
    try:
        assert resumed.epoch == 2
    finally:
        resumed.close()


def test_a_damaged_newest_checkpoint_is_skipped_with_one_line(tiny_job, capsys):
    tiny_job["schedule"]["ckpt_interval"] = 1
    tiny_job["schedule"]["rolling_state"] = False
    first = _train(tiny_job, epochs=3)
    newest = first.paths.training_state(2) / "model.safetensors"
    newest.write_bytes(newest.read_bytes()[:100])  # cut short, as a full disk would leave it
    resumed = _experiment(tiny_job, epochs=4)
    resumed.start(resume=True)
    try:
        assert resumed.epoch == 2  # continued after epoch 1, the newest complete one
    finally:
        resumed.close()
    warning = [
        line for line in capsys.readouterr().err.splitlines() if "skipping the checkpoint of epoch 2" in line
    ]
    assert len(warning) == 1
    assert "model.safetensors cannot be read" in warning[0]


def test_when_every_checkpoint_is_damaged_resume_refuses_instead_of_starting_over(tiny_job):
    tiny_job["schedule"]["ckpt_interval"] = 100
    first = _train(tiny_job, epochs=1)
    for state in first.paths.ckpts.rglob("optimizer.json"):
        state.write_text("{not json")
    resumed = _experiment(tiny_job, epochs=2)
    with pytest.raises(NoUsableCheckpointError, match=r"no checkpoint of .* can be loaded"):
        resumed.start(resume=True)


def test_a_different_process_count_is_said(tiny_job, capsys):
    tiny_job["schedule"]["ckpt_interval"] = 100
    first = _train(tiny_job, epochs=1)
    progress_file = first.paths.rolling_state(0) / "progress.json"
    progress = json.loads(progress_file.read_text())
    progress_file.write_text(json.dumps({**progress, "num_processes": 2}))
    resumed = _experiment(tiny_job, epochs=2)
    resumed.start(resume=True)
    resumed.close()
    assert "was saved by 2 process(es) and this run has 1" in capsys.readouterr().err


@pytest.mark.slow
def test_kill_9_mid_epoch_then_resume_continues_the_curve(tiny_job, tmp_path):
    job = json.loads(json.dumps(tiny_job))
    job["schedule"].update(epochs=400, ckpt_interval=1000, train_batches_per_epoch=20)
    job["logging"]["log_interval"] = 1
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(job))
    run_dir = tmp_path / "runs" / "tiny"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [*AMAGO, "run", "-c", str(job_file), "--quiet"], env=env, stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 180
        latest = run_dir / "ckpts" / "latest"
        while not list(latest.glob("state_epoch_[3-9]/progress.json")) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # inside a later epoch: its first records are logged, its state is not saved
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    killed = _records(run_dir)
    saved = max(int(p.parent.name.split("_")[-1]) for p in latest.glob("state_epoch_*/progress.json"))
    progress = json.loads((latest / f"state_epoch_{saved}" / "progress.json").read_text())
    assert max(r["Epoch"] for r in killed) > saved, "the kill should land after the last saved epoch"

    resumed = subprocess.run(
        [*AMAGO, "run", "--resume", str(run_dir), "-o", f"schedule.epochs={saved + 3}", "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming after epoch {saved}" in resumed.stderr
    records = _records(run_dir)
    for key in ("Epoch", "total_frames", "gradient_steps", "step"):
        values = [r[key] for r in records]
        assert values == sorted(values), f"{key} runs backwards in metrics.jsonl"
    first_after = next(r for r in records if r["Epoch"] > saved)
    assert first_after["total_frames"] >= progress["total_frames"]
    assert first_after["gradient_steps"] >= progress["grad_update_counter"]
    rolled_back = _records(run_dir, "metrics.rolled-back.jsonl")
    assert rolled_back
    assert all(r["Epoch"] > saved for r in rolled_back)  # only the work that was redone
    assert len(records) + len(rolled_back) > len(killed)  # nothing logged before the kill was lost
