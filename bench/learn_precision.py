"""Does a bf16 run learn what an fp32 run learns? The README's typed learning commands in both precisions.

For each task, each seed runs twice at the same time, once with ``-o optim.mixed_precision=no`` and once with
``=bf16``, one torch thread each, so both precisions share the same machine load. Run on a machine that computes
bf16 natively (``avx512_bf16`` / ``amx_bf16`` in ``lscpu``, or a GPU): elsewhere bf16 is emulated and a
wall-time budget measures the emulation, not the learning (the script says so and goes on).

Tasks (the README's learning table, typed as a user types them):
    tmaze30     ``amago run --env tmaze-passive -o env.corridor_length=30 --steps 19000``; target val return 1.0
    frozenlake  ``amago run --env frozen-lake --budget 12m``; no target: the val return at the end

Writes ``bench/out/learn_precision/<task>.json`` and ``.md`` (a table per task: env steps to the target, val
return at equal env steps, final return (the end-of-run test record), updates, wall minutes, load at start and end) and prints the table.

Usage:
    uv run python bench/learn_precision.py tmaze30 --seeds 1 2
    uv run python bench/learn_precision.py frozenlake --seeds 1 2
    uv run python bench/learn_precision.py tmaze30 --report-only

A benchmark, not a test: minutes per run, figures printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "learn_precision"
RETURN_KEY = "Average Total Return (Across All Env Names)"
WALL_KEY = "wall_time_seconds"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TORCH_COMPILE_DISABLE": "1"}
PRECISIONS = {"fp32": "no", "bf16": "bf16"}

TASKS: dict[str, dict] = {
    "tmaze30": {
        "args": ["--env", "tmaze-passive", "-o", "env.corridor_length=30", "--steps", "19000"],
        "target": 1.0,
    },
    "frozenlake": {"args": ["--env", "frozen-lake", "--budget", "12m"], "target": None},
}


def cpu_flags() -> list[str]:
    """The CPU flags that decide bf16's speed, as ``lscpu`` lists them."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return []
    flags = next(
        (line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("Flags")), []
    )
    return [f for f in flags if f in {"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}]


def run_name(task: str, precision: str, seed: int) -> str:
    return f"{task}_{precision}_seed{seed}"


def command(task: str, precision: str, seed: int) -> list[str]:
    amago = Path(sys.executable).with_name("amago")
    return [
        str(amago), "run", *TASKS[task]["args"], "-o", f"optim.mixed_precision={PRECISIONS[precision]}",
        "--seed", str(seed), "--name", run_name(task, precision, seed), "--quiet",
    ]  # fmt: skip


def run_pair(task: str, seed: int) -> None:
    """Both precisions of one seed at once; each run's start/end load and wall time beside its folder."""
    cwd = OUT / task
    cwd.mkdir(parents=True, exist_ok=True)
    procs = {}
    for precision in PRECISIONS:
        name = run_name(task, precision, seed)
        meta = {
            "cmd": " ".join(command(task, precision, seed)),
            "load_start": os.getloadavg(),
            "start": time.time(),
        }
        log = (cwd / f"{name}.log").open("w")
        proc = subprocess.Popen(
            command(task, precision, seed), cwd=cwd, env={**os.environ, **ONE_THREAD}, stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        procs[precision] = (proc, meta, log, name)
        print(f"[{task} seed {seed} {precision}] {meta['cmd']}", flush=True)
    running = dict(procs)
    while running:  # each run's end is stamped when it ends, not when its partner does
        for precision, (proc, meta, log, name) in list(running.items()):
            if proc.poll() is None:
                continue
            log.close()
            meta |= {
                "rc": proc.returncode,
                "wall_s": time.time() - meta["start"],
                "load_end": os.getloadavg(),
            }
            (cwd / f"{name}.run.json").write_text(json.dumps(meta, indent=1) + "\n")
            del running[precision]
        time.sleep(1.0)


def curve(task: str, precision: str, seed: int) -> dict | None:
    """Val returns (and the end-of-run test return last) by env steps, updates, wall time and load of one run
    (None: not run)."""
    cwd = OUT / task
    name = run_name(task, precision, seed)
    metrics, meta_path = cwd / "runs" / name / "metrics.jsonl", cwd / f"{name}.run.json"
    if not metrics.exists() or not meta_path.exists():
        return None
    steps, returns, walls, updates, final_steps, wall, used = [], [], [], 0, 0, 0.0, None
    for line in metrics.read_text().splitlines():
        record = json.loads(line)
        final_steps = max(final_steps, int(record.get("total_frames", 0)))
        updates = max(updates, int(record.get("gradient_steps", 0)))
        wall = max(wall, float(record.get(WALL_KEY, 0.0)))  # the run's own clock (start excluded)
        # val points, then the end-of-run test record as the last point (a --budget run may validate only at
        # its start, before any update).
        for kind in ("val", "test"):
            value = record.get(f"{kind}/{RETURN_KEY}")
            if value is not None:
                steps.append(int(record["total_frames"]))
                returns.append(float(value))
                walls.append(wall)
    resolved = cwd / "runs" / name / "config.resolved.json"
    if resolved.exists():
        provenance = json.loads(resolved.read_text()).get("_provenance", {})
        used = provenance.get("precision", {})
    meta = json.loads(meta_path.read_text())
    return {
        "steps": steps,
        "returns": returns,
        "wall_s": walls,
        "updates": updates,
        "final_steps": final_steps,
        "wall_min": wall / 60,
        "load": (meta["load_start"][0], meta["load_end"][0]),
        "rc": meta["rc"],
        "precision": used,
    }


def at_steps(c: dict, at: int) -> float | None:
    """The val return at the last val point at or before ``at`` env steps."""
    before = [r for s, r in zip(c["steps"], c["returns"], strict=True) if s <= at]
    return before[-1] if before else None


def report(task: str, seeds: list[int]) -> str:
    target = TASKS[task]["target"]
    curves = {(p, s): curve(task, p, s) for p in PRECISIONS for s in seeds}
    done = {k: c for k, c in curves.items() if c}
    equal = min((c["final_steps"] for c in done.values()), default=0)
    lines = [
        f"### {task}: {' '.join(TASKS[task]['args'])} (CPU flags: {' '.join(cpu_flags()) or 'unknown'})",
        "",
        "| precision | seed | env steps (minutes) to target | val return at "
        f"{equal:,} env steps | final return (the end-of-run test) | env steps | updates | wall min | load start→end | rc |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (precision, seed), c in curves.items():
        if c is None:
            lines.append(f"| {precision} | {seed} | not run | | | | | | | |")
            continue
        reached = next(
            (
                (s, w)
                for s, r, w in zip(c["steps"], c["returns"], c["wall_s"], strict=True)
                if target is not None and r >= target
            ),
            None,
        )
        to_target = (
            "—"
            if target is None
            else (f"{reached[0]:,} ({reached[1] / 60:.1f} min)" if reached else "not reached")
        )
        eq = at_steps(c, equal)
        final = c["returns"][-1] if c["returns"] else None
        lines.append(
            f"| {precision} | {seed} | {to_target} | {'' if eq is None else f'{eq:.3f}'} | "
            f"{'' if final is None else f'{final:.3f}'} | {c['final_steps']:,} | {c['updates']:,} | "
            f"{c['wall_min']:.1f} | {c['load'][0]:.1f}→{c['load'][1]:.1f} | {c['rc']} |"
        )
    text = "\n".join(lines) + "\n"
    (OUT / f"{task}.md").write_text(text)
    (OUT / f"{task}.json").write_text(
        json.dumps({f"{p}_seed{s}": c for (p, s), c in curves.items()}, indent=1)
    )
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    flags = cpu_flags()
    if not args.report_only:
        if not {"avx512_bf16", "amx_bf16"} & set(flags):
            print(
                "warning: this CPU emulates bf16 (no avx512_bf16/amx_bf16): the bf16 runs measure emulation."
            )
        for seed in args.seeds:
            run_pair(args.task, seed)
    print(report(args.task, args.seeds))


if __name__ == "__main__":
    main()
