"""Record seeded runs before a refactor and check the same commands give the same metrics after it.

    uv run python bench/behaviour_unchanged.py record /tmp/before      # on the commit before the change
    uv run python bench/behaviour_unchanged.py record /tmp/after       # on the commit after it
    uv run python bench/behaviour_unchanged.py compare /tmp/before /tmp/after

Each run is a real ``amago run`` in its own process with ``--seed`` and one torch thread: the main job (T-Maze,
~3 min on 2 cores), frozen-lake sized by ``--smoke`` (its sized config is run into a kept folder, since a smoke
run removes its own), POPGym CountRecallEasy sized by ``--steps``, a 2-process accelerate (gloo) run, and a
``--seeds 2`` group (two child runs started by the group, each with its own metrics).
``compare`` reads every record of each run's ``metrics.jsonl`` with the wall-clock columns dropped (FPS, times)
and prints, per run, ``identical`` or the first record and key that differ. Runs on one machine compare
exactly; another CPU (AVX2 against AVX-512) may round differently, so record both sides on the same machine.
``optim.mixed_precision=auto`` is pinned to fp32 (``AMAGO_AUTO_PRECISION=no``): on a CPU with native bf16 it
times both precisions at start, and a busier machine may then choose the other one, which is not a change of
behaviour.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SEED = "7"
WALL_CLOCK = ("FPS", "seconds", "elapsed", "wall")
"""Substrings of metric names that measure the machine, not the learning (``Env FPS (per_process)``); dropped
before comparing. Not "time": ``(test-time gamma)`` and ``(in Timesteps)`` are learning metrics."""
THREADS = ["-o", "run.torch_threads=1", "-o", "rollout.env_mode=sync"]
PINNED = {"OMP_NUM_THREADS": "1", "AMAGO_NO_PREFLIGHT": "1", "AMAGO_AUTO_PRECISION": "no"}
"""The environment of every run: one OpenMP thread, no preflight, and ``auto`` precision decided without timing."""


def _amago(*args: str) -> list[str]:
    return [sys.executable, "-m", "amago_core.cli.app", *args]


def _accelerate(*args: str) -> list[str]:
    launcher = Path(sys.executable).parent / "accelerate"
    fixed = ["--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no"]
    return [str(launcher), "launch", *fixed, "--dynamo_backend", "no", "-m", "amago_core.cli.app", *args]


def _run(command: list[str], log: Path) -> float:
    started = time.monotonic()
    env = {**os.environ, **PINNED}
    with log.open("w") as handle:
        code = subprocess.run(
            command, stdout=handle, stderr=subprocess.STDOUT, env=env, check=False
        ).returncode
    if code != 0:
        sys.exit(f"behaviour_unchanged: `{' '.join(command)}` exited {code}; see {log}")
    return time.monotonic() - started


def _sized_config(out: Path, name: str, *flags: str) -> Path:
    """The config a sizing flag produces (``--dry-run``), written where a real run can read it."""
    printed = subprocess.run(
        _amago("run", *flags, "--seed", SEED, *THREADS, "--dry-run"),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **PINNED},
    ).stdout
    config = json.loads(printed[printed.index("{") :])
    path = out / f"{name}.json"
    path.write_text(json.dumps(config, indent=1))
    return path


def record(out: Path) -> None:
    """Runs every seeded command into ``out/<run>/`` and prints each one's wall time."""
    out.mkdir(parents=True, exist_ok=True)
    common = ["--seed", SEED, *THREADS, "--no-preflight"]
    smoke = _sized_config(out, "frozen-lake-smoke", "--env", "frozen-lake", "--smoke")
    popgym = _sized_config(out, "popgym", "--env", "popgym-count-recall-easy", "--steps", "3k")
    runs = {
        "main-job": _amago("run", *common, "--name", "main-job"),
        "frozen-lake-smoke": _amago("run", "-c", str(smoke), *common, "--name", "frozen-lake-smoke"),
        "popgym": _amago("run", "-c", str(popgym), *common, "--name", "popgym"),
        "accelerate-2": _accelerate(
            "run", "--env", "tmaze-passive", *common, "--name", "accelerate-2", "--steps", "2k"
        ),
        "seeds-2": _amago(
            "run", "--env", "tmaze-passive", "--seeds", "2", *common, "--name", "seeds-2", "--steps", "1k"
        ),
    }
    for name, command in runs.items():
        command += ["-o", f"run.ckpt_base_dir={out}"]
        seconds = _run(command, out / f"{name}.log")
        print(f"{name}: {seconds:.0f} s -> {out / name / 'metrics.jsonl'}")


def _records(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{k: v for k, v in row.items() if not any(w in k for w in WALL_CLOCK)} for row in rows]


def compare(before: Path, after: Path) -> int:
    """Prints, per run, ``identical`` or where the metrics first differ; returns the number that differ."""
    differ = 0
    for metrics in sorted(before.glob("**/metrics.jsonl")):
        name = metrics.parent.relative_to(before).as_posix()
        other = after / name / "metrics.jsonl"
        if not other.is_file():
            print(f"{name}: missing in {after}")
            differ += 1
            continue
        old, new = _records(metrics), _records(other)
        first = next(((i, a, b) for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), None)
        if first is None and len(old) == len(new):
            print(f"{name}: identical ({len(old)} records)")
            continue
        differ += 1
        if first is None:
            print(f"{name}: {len(old)} records before, {len(new)} after")
            continue
        index, a, b = first
        keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        print(
            f"{name}: record {index} differs in {keys[:5]}: {[a.get(k) for k in keys[:3]]} -> "
            f"{[b.get(k) for k in keys[:3]]}"
        )
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("record").add_argument("out", type=Path)
    both = sub.add_parser("compare")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.what == "record":
        record(args.out)
    else:
        sys.exit(1 if compare(args.before, args.after) else 0)


if __name__ == "__main__":
    main()
