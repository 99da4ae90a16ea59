"""Soak test: run a job for a wall time and watch its memory, open files and disk, with their slopes per hour.

Runs ``amago run`` (by default the embedded main job made endless, a small buffer, a checkpoint every 20 epochs)
as a child process for ``--minutes``, and every ``--interval`` seconds prints one row: the resident memory of
the job's process tree, its open file descriptors, the size on disk of the run folder and the number of
trajectory files in its buffer. At the end: least-squares slopes per hour, over all samples and over the second
half (after start-up and the buffer filling up), the run folder's disk use by part (``amago doctor RUN_DIR``),
and with ``--out`` a JSON of everything. Then the job gets SIGINT (it saves its state and stops).

Usage: uv run python bench/soak.py [--minutes 60] [--interval 60] [--out soak.json] [--keep DIR]
                                    [-- AMAGO RUN ARGUMENTS...]
Arguments after ``--`` replace the default job's (``-o schedule.epochs=100000 -o replay.dset_max_size=2000
-o schedule.ckpt_interval=20``); the run folder and name are always set here.
Target (issue 18): memory slope about 0 over the second half; disk bounded by the retention settings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from amago_tools.disk_report import folder_disk_use, run_buffer_folder, run_disk_use

DEFAULT_JOB = (
    "-o",
    "schedule.epochs=100000",
    "-o",
    "replay.dset_max_size=2000",
    "-o",
    "schedule.ckpt_interval=20",
)
RUN_NAME = "soak"
STOP_GRACE_S = 120.0
"""How long the job may take to save its state and exit after SIGINT before it is killed."""
MB = 1e6


@dataclass
class Sample:
    """One look at the job."""

    seconds: float
    rss_bytes: int
    open_files: int
    run_dir_bytes: int
    buffer_files: int


def _proc_tree(pid: int) -> list[int]:
    """``pid`` and every descendant, from /proc's parent ids."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited while being listed
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, pending = [], [pid]
    while pending:
        current = pending.pop()
        tree.append(current)
        pending.extend(children.get(current, []))
    return tree


def _proc_usage(pid: int) -> tuple[int, int]:
    """Resident bytes (VmRSS) and open descriptors of one process from /proc; zeros once it has exited."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss = next(
            (int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0
        )
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0, 0


def tree_usage(pid: int) -> tuple[int, int]:
    """Resident memory and open file descriptors (files, sockets, pipes) of ``pid`` and its descendants (env
    workers, data loaders): psutil when it is installed, else /proc."""
    try:
        import psutil
    except ImportError:
        usages = [_proc_usage(p) for p in _proc_tree(pid)]
        return sum(rss for rss, _ in usages), sum(fds for _, fds in usages)
    rss = fds = 0
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0, 0
    for process in tree:
        try:
            rss += process.memory_info().rss
            fds += process.num_fds()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # exited between the listing and the look
    return rss, fds


def buffer_file_count(run_dir: Path) -> int:
    """Trajectory files in the run's buffer (FIFO and protected; the quarantine is not sampled from)."""
    try:
        config = json.loads((run_dir / "config.resolved.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    buffer = run_buffer_folder(run_dir, config if isinstance(config, dict) else {})
    return sum(folder_disk_use(buffer / part)[1] for part in ("fifo", "protected"))


def take_sample(pid: int, run_dir: Path, started: float) -> Sample:
    rss, fds = tree_usage(pid)
    return Sample(
        seconds=time.monotonic() - started,
        rss_bytes=rss,
        open_files=fds,
        run_dir_bytes=folder_disk_use(run_dir)[0],
        buffer_files=buffer_file_count(run_dir),
    )


def slope_per_hour(hours: Sequence[float], values: Sequence[float]) -> float | None:
    """Least-squares slope of ``values`` against ``hours``; None with fewer than two samples."""
    if len(hours) < 2:
        return None
    mean_t, mean_v = sum(hours) / len(hours), sum(values) / len(values)
    spread = sum((t - mean_t) ** 2 for t in hours)
    if spread == 0:
        return None
    return sum((t - mean_t) * (v - mean_v) for t, v in zip(hours, values, strict=True)) / spread


SERIES = {
    "rss_mb": lambda s: s.rss_bytes / MB,
    "open_files": lambda s: float(s.open_files),
    "run_dir_mb": lambda s: s.run_dir_bytes / MB,
    "buffer_files": lambda s: float(s.buffer_files),
}
"""The figures whose slopes are reported, in the units they are printed in."""


def slopes(samples: Sequence[Sample]) -> dict[str, float | None]:
    hours = [s.seconds / 3600 for s in samples]
    return {name: slope_per_hour(hours, [value(s) for s in samples]) for name, value in SERIES.items()}


def print_row(sample: Sample) -> None:
    print(
        f"{sample.seconds / 60:7.1f} {sample.rss_bytes / MB:9.1f} {sample.open_files:10d} "
        f"{sample.run_dir_bytes / MB:11.1f} {sample.buffer_files:12d}",
        flush=True,
    )


def stop(job: subprocess.Popen[bytes]) -> int:
    """SIGINT (the job saves its state and exits), then SIGKILL after :data:`STOP_GRACE_S`; the exit code."""
    if job.poll() is None:
        job.send_signal(signal.SIGINT)
        try:
            job.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            job.kill()
            job.wait()
    return job.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="Wall time of the job.")
    parser.add_argument("--interval", type=float, default=60.0, help="Seconds between samples.")
    parser.add_argument("--out", type=Path, help="Write the samples and slopes here (JSON).")
    parser.add_argument(
        "--keep", type=Path, help="Run in this folder and keep it (default: a removed temp folder)."
    )
    parser.add_argument(
        "job", nargs=argparse.REMAINDER, help="`-- ARGS`: amago run arguments instead of the default job."
    )
    args = parser.parse_args()
    job_args = [a for a in args.job if a != "--"] or list(DEFAULT_JOB)
    amago = shutil.which("amago", path=str(Path(sys.executable).parent)) or shutil.which("amago")
    if amago is None:
        sys.exit("the `amago` console script is not installed; run `uv sync --all-packages` first")

    base = args.keep or Path(tempfile.mkdtemp(prefix="amago-soak-"))
    base.mkdir(parents=True, exist_ok=True)
    run_dir = base / RUN_NAME
    command = [amago, "run", *job_args, "--name", RUN_NAME, "-o", f"run.ckpt_base_dir={base}", "--quiet"]
    log_path = base / "soak-job.log"
    print(f"job: {' '.join(command)}\nlog: {log_path}", flush=True)
    print("    min    rss_mb open_files  run_dir_mb buffer_files", flush=True)
    samples: list[Sample] = []
    with log_path.open("wb") as log:
        started = time.monotonic()
        job = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = started + args.minutes * 60
            next_sample = started + args.interval
            while job.poll() is None and time.monotonic() < deadline:
                if time.monotonic() >= next_sample:
                    samples.append(take_sample(job.pid, run_dir, started))
                    print_row(samples[-1])
                    next_sample += args.interval
                time.sleep(min(1.0, max(0.0, min(next_sample, deadline) - time.monotonic())))
            ended_early = job.poll() is not None
            if not ended_early:
                samples.append(take_sample(job.pid, run_dir, started))
                print_row(samples[-1])
        finally:
            code = stop(job)
    if ended_early:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-5:]
        print(f"the job ended before the time was up (exit {code}):", *tail, sep="\n  ")

    overall, settled = slopes(samples), slopes(samples[len(samples) // 2 :])
    print("\nslope per hour        all samples   second half")
    for name in SERIES:
        cells = [
            f"{value:+13.2f}" if value is not None else f"{'-':>13}"
            for value in (overall[name], settled[name])
        ]
        print(f"  {name:<18} {cells[0]} {cells[1]}")
    parts = run_disk_use(run_dir) if run_dir.is_dir() else []
    if parts:
        print("\nrun folder by part (after the stop):")
        for part in parts:
            print(f"  {part.name:<16} {part.bytes / MB:9.1f} MB {part.files:7d} files")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "command": command,
            "minutes": args.minutes,
            "interval_s": args.interval,
            "exit_code": code,
            "ended_early": ended_early,
            "samples": [asdict(s) for s in samples],
            "slopes_per_hour": {"all": overall, "second_half": settled},
            "disk_use_by_part": [part.to_json() for part in parts],
        }
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {args.out}")
    if args.keep is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
