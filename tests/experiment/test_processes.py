"""Real processes: kill -9 and resume, separate collect/learn processes, 2-process DDP with accelerate (gloo)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

AMAGO = [sys.executable, "-m", "amago_core.cli.app"]


def _write_job(tmp_path: Path, job: dict, **schedule) -> Path:
    job = json.loads(json.dumps(job))
    job["schedule"].update(schedule)
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path


def _wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            pytest.fail(f"process ended (rc={proc.returncode}) before {what}:\n{out[-3000:]}")
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}


@pytest.mark.slow
def test_kill_9_then_resume_keeps_every_buffer_file(tiny_job, tmp_path):
    # Epochs enough that no CPU finishes them before the kill (the test kills it after a few).
    job = _write_job(tmp_path, tiny_job, epochs=100_000, ckpt_interval=1)
    run_dir = tmp_path / "runs" / "tiny"
    states = run_dir / "ckpts" / "training_states"
    highest = [-1]

    def third_state_written() -> bool:
        # The event is "epoch 3's state was written", not "3 states are on disk": retention keeps 2, and a fast
        # CPU writes and prunes them between two looks.
        epochs = [int(p.parent.name.rsplit("_", 1)[1]) for p in states.glob("tiny_epoch_*/progress.json")]
        highest[0] = max([highest[0], *epochs])
        return highest[0] >= 3

    proc = subprocess.Popen(
        [*AMAGO, "run", "-c", str(job), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )
    try:
        _wait_for(third_state_written, 180, "epoch 3's training state", proc)
        time.sleep(0.3)  # land somewhere inside the next epoch
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    fifo = run_dir / "buffer" / "fifo"
    before = {p.name for p in fifo.iterdir() if p.suffix == ".npz"}
    assert before
    saved = sorted(int(p.parent.name.rsplit("_", 1)[1]) for p in states.glob("tiny_epoch_*/progress.json"))
    last = saved[-1]

    resumed = subprocess.run(
        [*AMAGO, "run", "--resume", str(run_dir), "-o", f"schedule.epochs={last + 3}", "--quiet"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"resuming after epoch {last}" in resumed.stderr
    after = {p.name for p in fifo.iterdir() if p.suffix == ".npz"}
    assert before <= after  # no buffer file lost
    for name in after:
        with np.load(fifo / name) as data:  # and none is torn
            assert "rews" in data.files
    progress = json.loads((states / f"tiny_epoch_{last + 2}" / "progress.json").read_text())
    assert progress["epoch"] == last + 2
    resolved = json.loads((run_dir / "config.resolved.json").read_text())
    assert resolved["traj_encoder"]["d_model"] == 32  # the same config as before the kill


@pytest.mark.slow
def test_collect_and_learn_processes_share_buffer_and_policy(tiny_job, tmp_path):
    job = _write_job(tmp_path, tiny_job, epochs=400, train_batches_per_epoch=3)
    run_dir = tmp_path / "runs" / "tiny"
    # The learner starts first and waits for data instead of burning its epochs on an empty buffer.
    learner = subprocess.Popen(
        [*AMAGO, "run", "-c", str(job), "--mode", "learn", "-o", "schedule.epochs=3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    collector = subprocess.Popen(
        [*AMAGO, "run", "-c", str(job), "--mode", "collect", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )
    try:
        out, err = learner.communicate(timeout=300)
        assert learner.returncode == 0, out[-2000:] + err[-2000:]
        summary = json.loads(out[out.index('{\n  "run_dir"') :])
        # Started before any data existed: without waiting its 3 epochs would have passed with 0 updates.
        assert summary["gradient_steps"] == 3 * 3
        assert summary["total_frames"] == 0  # the learner collects nothing itself
        assert (run_dir / "ckpts" / "latest" / "policy.safetensors").is_file()
        fifo = run_dir / "buffer" / "fifo"
        count = len(list(fifo.glob("*.npz")))
        _wait_for(lambda: len(list(fifo.glob("*.npz"))) > count, 60, "the collector to keep going", collector)
    finally:
        collector.terminate()
        collector.wait(timeout=30)
    resolved = json.loads((run_dir / "config.resolved.json").read_text())
    assert resolved["run"]["mode"] == "learn"  # the collector never overwrote the learner's record
    collect_log = run_dir / "metrics-collect.jsonl"
    assert collect_log.is_file()
    learn_records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert all(r["total_frames"] == 0 for r in learn_records)


@pytest.mark.slow
def test_accelerate_launch_two_cpu_processes(tiny_job, tmp_path):
    job = _write_job(tmp_path, tiny_job, epochs=2, ckpt_interval=1)
    launcher = Path(sys.executable).parent / "accelerate"
    result = subprocess.run(
        [
            str(launcher),
            "launch",
            "--multi_gpu",  # accelerate's multi-process launcher; amago runs it as MULTI_CPU (gloo) without CUDA
            "--num_processes",
            "2",
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            "-m",
            "amago_core.cli.app",
            "run",
            "-c",
            str(job),  # the job is not verbose: stdout holds the JSON summary alone (--quiet would drop it)
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads(result.stdout[result.stdout.index("{") :])  # only the main process prints it
    assert result.stdout.count('"run_dir"') == 1
    assert summary["total_frames"] == 2 * 2 * 8 * 4  # processes x epochs x steps x actors
    run_dir = tmp_path / "runs" / "tiny"
    assert sorted(p.name for p in (run_dir / "ckpts" / "policy_weights").iterdir()) == [
        "policy_epoch_0.safetensors",
        "policy_epoch_1.safetensors",
    ]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    val = [r for r in records if "val/Average Total Return (Across All Env Names)" in r]
    assert len(val) == 2  # one averaged record per evaluation, not one per process
    state = run_dir / "ckpts" / "latest" / "state_epoch_1"
    assert {"rng_0.json", "rng_1.json"} <= {p.name for p in state.iterdir()}  # each process's random streams
    assert json.loads((state / "progress.json").read_text())["num_processes"] == 2
    # Resuming the 2-process run as 1 process continues, and says what changes.
    resumed = subprocess.run(
        [*AMAGO, "run", "--resume", str(run_dir), "-o", "schedule.epochs=3", "--quiet"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "was saved by 2 process(es) and this run has 1" in resumed.stderr
    assert "resuming after epoch 1" in resumed.stderr
