"""`amago sweep` on this machine: learning rate x trajectory encoder on T-Maze with a 30-step corridor.

Runs the command a user would type, ``amago sweep --space SPACE -o env.corridor_length=30 --steps S --trials N
--parallel P``, on the embedded main job (T-Maze passive: the goal side shown at the start, recalled at the
end of the corridor). The sweep file searches ``optim.learning_rate`` (log-uniform) and ``traj_encoder.kind``
(gru, transformer) and enqueues the main job's own values as trial 0, so that the default runs under the same
seed, steps and objective as every other trial. Prints the machine (CPU flags, load), the trials by state, the
wall time, the default's score beside the best one, and the best values.

Run: ``.venv/bin/python bench/sweep_tmaze.py [--trials 12 --parallel 2 --steps 4000 --out /tmp/amago-sweep-bench]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

OBJECTIVE = "val/Average Total Return (Across All Env Names)"


def machine() -> str:
    flags = ""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        model = next(
            (line.split(":", 1)[1].strip() for line in lscpu.splitlines() if "Model name" in line), "?"
        )
        cpu_flags = next((line for line in lscpu.splitlines() if line.startswith("Flags")), "")
        flags = ", ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in cpu_flags)
    except OSError:
        model = "?"
    return f"{model}; {os.cpu_count()} cores; flags: {flags or 'none of avx2/avx512'}"


def default_values(corridor: int) -> dict[str, object]:
    """The main job's own learning rate and trajectory encoder (read from `amago run --dry-run`, not copied)."""
    command = [
        sys.executable,
        "-m",
        "amago_core.cli.app",
        "run",
        "--dry-run",
        "-o",
        f"env.corridor_length={corridor}",
    ]
    config = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    kind = config["traj_encoder"]["kind"]
    return {
        "optim.learning_rate": config["optim"]["learning_rate"],
        "traj_encoder.kind": {"rnn": "gru"}.get(kind, kind),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--steps", default="4000", help="train env steps of each trial")
    parser.add_argument("--corridor", type=int, default=30)
    parser.add_argument("--last", type=int, default=2, help="evaluations averaged into a trial's score")
    parser.add_argument("--out", type=Path, default=Path("/tmp/amago-sweep-bench"))
    args = parser.parse_args()

    default = default_values(args.corridor)
    space = args.out / "space.toml"
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    space.write_text(
        textwrap.dedent(
            f"""
            last = {args.last}
            startup_trials = 4
            [space]
            "optim.learning_rate" = {{ log_uniform = [3e-5, 1e-3] }}
            "traj_encoder.kind" = ["gru", "transformer"]
            [[enqueue]]
            "optim.learning_rate" = {default["optim.learning_rate"]!r}
            "traj_encoder.kind" = "{default["traj_encoder.kind"]}"
            """
        )
    )
    command = [
        *(sys.executable, "-m", "amago_core.cli.app", "sweep", "--space", str(space)),
        *(
            "-o",
            f"env.corridor_length={args.corridor}",
            "-o",
            "schedule.val_interval=2",
            "-o",
            "logging.plot=false",
        ),
        *("-o", f"run.ckpt_base_dir={args.out}", "--name", "tmaze", "--seed", "7"),
        *("--steps", args.steps, "--trials", str(args.trials), "--parallel", str(args.parallel)),
    ]
    load_before = os.getloadavg()
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    load_after = os.getloadavg()
    if done.returncode != 0:
        sys.exit(f"amago sweep failed ({done.returncode}):\n{done.stderr[-3000:]}")
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "amago_core.cli.app",
            "sweep",
            "show",
            str(args.out / "tmaze"),
            "--json",
            "--top",
            "100",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(shown.stdout)
    rows = {row["number"]: row for row in report["best"]}
    print(f"machine: {machine()}")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)")
    print(f"command: amago {' '.join(command[3:])}")
    print(
        f"trials: {report['trials']}; wall time {wall / 60:.1f} min ({wall / args.trials:.0f} s per trial, {args.parallel} at a time)"
    )
    ranked = sorted(rows.values(), key=lambda row: -row["value"])
    for row in ranked:
        params = ", ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row["params"].items()
        )
        print(
            f"  trial {row['number']:>2}: {row['value']:+.3f}  {params}{'  (default)' if row['number'] == 0 else ''}"
        )
    if 0 in rows:
        best = ranked[0]
        verdict = "at least as good as" if best["value"] >= rows[0]["value"] else "worse than"
        print(
            f"default (trial 0): {rows[0]['value']:+.3f}; best (trial {best['number']}): {best['value']:+.3f}: {verdict} the default"
        )
    if report.get("importances"):
        print("importances: " + ", ".join(f"{k} {v:.2f}" for k, v in report["importances"].items()))
    print(
        f"plots: {', '.join(Path(p).name for p in report.get('plots', []))} in {args.out / 'tmaze' / 'plots'}"
    )


if __name__ == "__main__":
    main()
