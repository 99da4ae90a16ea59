"""One process per run: a second process on a run in use is refused naming the holder, a lock a SIGKILLed run
left is taken over, and a fresh run never mixes into a folder that holds one."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import TINY, amago, snapshot, tiny_run

from amago_core.experiment.processes import ProcessRole
from amago_core.experiment.run_dir import RunPaths
from amago_core.experiment.run_lock import (
    LOCK_FILE,
    ExistingRunError,
    RunInUseError,
    acquire,
    hold_run,
)

HOLDER = """
import sys, time
from pathlib import Path
from amago_core.experiment.run_lock import acquire
lock = acquire(Path(sys.argv[1]), "mode both")
print("held", flush=True)
time.sleep(600)
"""


def _start_holder(root: Path) -> subprocess.Popen:
    """A real process that takes the run's lock and keeps it (until killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_process_is_refused_naming_the_holder_and_a_killed_holder_is_taken_over(tmp_path):
    root = tmp_path / "runs" / "x"
    holder = _start_holder(root)
    try:
        with pytest.raises(RunInUseError) as refused:
            acquire(root, "mode both")
        message = str(refused.value)
        assert "\n" not in message
        assert f"pid {holder.pid} on host {socket.gethostname()}" in message
        assert "mode both" in message
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    # The kernel dropped the killed holder's lock; its record is still in the file, and is replaced.
    assert json.loads((root / LOCK_FILE).read_text())["pid"] == holder.pid
    lock = acquire(root, "mode learn")
    assert lock is not None
    try:
        record = json.loads((root / LOCK_FILE).read_text())
        assert record["pid"] == os.getpid()
        assert record["role"] == "mode learn"
    finally:
        lock.release()
    assert not (root / LOCK_FILE).exists()  # released: no file left behind
    acquire(root, "mode both").release()  # and it can be taken again


def test_amago_run_on_a_run_in_use_is_one_line_and_writes_nothing(tmp_path):
    config = tmp_path / "job.json"
    config.write_text(json.dumps({**TINY, "run": {**TINY["run"], "ckpt_base_dir": str(tmp_path / "runs")}}))
    root = tmp_path / "runs" / "busy"
    holder = _start_holder(root)
    try:
        before = snapshot(root)
        result = amago("run", "-c", str(config), "--name", "busy", "--quiet")
        assert result.exit_code != 0
        lines = [line for line in result.output.splitlines() if line.startswith("amago: error:")]
        assert len(lines) == 1, result.output
        assert f"pid {holder.pid} on host {socket.gethostname()}" in lines[0]
        assert snapshot(root) == before
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)


def test_a_fresh_run_with_an_existing_name_is_refused_and_the_run_is_untouched(tmp_path):
    run = tiny_run(tmp_path, "taken")
    before = snapshot(run)
    config = tmp_path / "again.json"
    config.write_text(json.dumps({**TINY, "run": {**TINY["run"], "ckpt_base_dir": str(tmp_path / "runs")}}))
    result = amago("run", "-c", str(config), "--name", "taken", "--quiet")
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.startswith("amago: error:")]
    assert len(lines) == 1, result.output
    assert "already holds a run" in lines[0]
    assert f"amago run --resume {run}" in lines[0]
    assert snapshot(run) == before
    # Resuming it is what the line says, and it works (the lock was released by the refused run).
    resumed = amago("run", "--resume", str(run), "--quiet")
    assert resumed.exit_code == 0, resumed.output


def _accelerator(main: bool = True) -> SimpleNamespace:
    return SimpleNamespace(is_main_process=main, num_processes=1, process_index=0 if main else 1)


def _role(mode: str) -> ProcessRole:
    return ProcessRole(collects=mode != "learn", learns=mode != "collect", evaluates=mode != "learn")


def test_roles_collectors_and_eval_share_a_run_a_second_learner_does_not(tmp_path):
    paths = RunPaths(tmp_path, "shared")
    learner = hold_run(paths, _accelerator(), _role("learn"), resume=False, evaluation_only=False)
    assert learner is not None
    try:
        # Collectors (any number: the docs invite adding more) and `amago eval` take no lock.
        for _ in range(2):
            assert (
                hold_run(paths, _accelerator(), _role("collect"), resume=False, evaluation_only=False) is None
            )
        assert hold_run(paths, _accelerator(), _role("both"), resume=True, evaluation_only=True) is None
        # The other processes of an accelerate launch: the main process holds the lock for them.
        assert (
            hold_run(paths, _accelerator(main=False), _role("learn"), resume=False, evaluation_only=False)
            is None
        )
        with pytest.raises(RunInUseError):
            hold_run(paths, _accelerator(), _role("both"), resume=True, evaluation_only=False)
    finally:
        learner.release()


def test_a_python_start_in_a_folder_that_holds_a_run_is_refused(tmp_path):
    paths = RunPaths(tmp_path, "old")
    paths.root.mkdir(parents=True)
    paths.config.write_text("{}")
    with pytest.raises(ExistingRunError, match="already holds a run"):
        hold_run(paths, _accelerator(), _role("both"), resume=False, evaluation_only=False)
    assert not (paths.root / LOCK_FILE).exists()  # the refused run let go of the lock
    lock = hold_run(paths, _accelerator(), _role("both"), resume=True, evaluation_only=False)
    assert lock is not None
    lock.release()


def test_a_symlinked_lock_file_is_refused(tmp_path):
    root = tmp_path / "runs" / "x"
    root.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (root / LOCK_FILE).symlink_to(victim)
    with pytest.raises(OSError, match="is a symlink"):
        acquire(root, "mode both")
    assert victim.read_text() == "mine"


def test_the_lock_is_released_when_the_run_ends(tmp_path):
    run = tiny_run(tmp_path, "ends")
    assert not (run / LOCK_FILE).exists()
    start = time.monotonic()
    lock = acquire(run, "mode both")  # nothing holds it any more
    assert lock is not None
    lock.release()
    assert time.monotonic() - start < 5
