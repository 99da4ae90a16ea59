"""amago against the real AMAGO v3.3.0, measured side by side in one run on this machine.

For each trajectory encoder (ff, GRU, Transformer) it runs AMAGO's own measurement
(``../shared/baselines/amago-3.3.0/amago_bench.py throughput``) and amago's (``bench/throughput.py``) of the
same configuration, one process at a time, alternating which side goes first, ``--reps`` times, one torch
thread each, and prints one table: collection env steps/s, gradient updates/s, launch-to-first-step (import +
build + start) and peak RSS, each side's median and spread, the ratio of medians, and the load average. With
``--more-actors 32 64`` (the default) it also measures collection alone with 32 and 64 parallel envs (one policy
call steps them all: larger batches per call are how a CPU gets throughput), rows ``encoder@N``.

Utilisation, for both libraries: the FLOPs of one update and of one policy step, counted with
``FlopCounterMode`` (``bench/flops.py``) on the measured configuration (amago: by ``bench/throughput.py`` after
its timed part; AMAGO: by ``bench/flops_amago_ref.py`` in AMAGO's venv, once per encoder), the GFLOP/s the
measured rates reach (update: counted FLOPs per update / mean compute seconds per update; collection: FLOPs per
policy step x env steps/s), the fp32 matmul peak each side's torch measured on this core in this run, and MFU
against the higher of the two (the core's peak; load only ever lowers a measurement).

Then the T-Maze H=30 race: AMAGO's own recipe (``run_learning.sh tmaze30``: examples/04_tmaze.py settings) against
``bench/learn.py tmaze-h30`` (amago's T-Maze recipe), one seed at a time, alternating which side goes first. Each
side reports env steps, gradient updates and minutes at its first validation return of 1.0.

The AMAGO side runs in a throw-away venv (``setup.sh``; built here when missing, ~1 min). It is a measuring
stick only: nothing of it is imported by the project.

Usage: uv run python bench/vs_amago.py [--reps 2] [--encoders ff rnn transformer] [--updates 30]
       [--race-seeds 1 2] [--race-minutes 12] [--skip-throughput] [--skip-race]
Not part of CI (minutes per configuration); the figures go into the issue note and the README.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from amago_core.experiment.hardware import recorded_cpu_flags

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/flops.py, a sibling script module
import flops

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT.parent / "shared" / "baselines" / "amago-3.3.0"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TORCH_COMPILE_DISABLE": "1"}


def ensure_baseline(venv: Path) -> Path:
    """The AMAGO venv's python, building the venv with the baseline's ``setup.sh`` when it is missing."""
    python = venv / "bin" / "python"
    if not python.is_file():
        print(f"building the AMAGO venv at {venv} (setup.sh, ~1 min)", file=sys.stderr)
        subprocess.run(["bash", str(BASELINE / "setup.sh"), str(venv)], check=True)
    return python


def run_measured(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Runs ``cmd``; returns its wall seconds and its peak RSS in KiB (from the kernel's accounting)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0:
        msg = f"{' '.join(cmd[:4])} ... failed ({proc.returncode}): {err[-1500:]}"
        raise RuntimeError(msg)
    return time.perf_counter() - start, usage.ru_maxrss


def import_seconds(python: str, module: str, env: dict[str, str]) -> float:
    """Wall time of a fresh interpreter importing ``module`` (what a launch pays before building anything)."""
    wall, _ = run_measured([python, "-c", f"import {module}"], env)
    return wall


def timed_updates(args: argparse.Namespace, actors: int) -> tuple[int, int]:
    """(warm-up, timed) updates of one side's run: the asked ones at 16 actors; other actor counts measure
    collection only (one update, untimed in the table)."""
    return (args.warmup, args.updates) if actors == 16 else (0, 1)


def amago_side(
    python: Path, encoder: str, args: argparse.Namespace, out: Path, env: dict[str, str], actors: int = 16
) -> dict:
    warmup, updates = timed_updates(args, actors)
    cmd = [
        str(python), str(BASELINE / "amago_bench.py"), "throughput", "--encoder", encoder, "--threads", "1",
        "--collect_epochs", str(args.collect_calls), "--warmup_updates", str(warmup),
        "--updates", str(updates), "--parallel_actors", str(actors), "--out", str(out),
    ]  # fmt: skip
    _, rss = run_measured(cmd, {**env, "AMAGO_REF_SRC": str(BASELINE)})
    data = json.loads(out.read_text())
    compute = data["train"].get("updates_per_s_compute_only")
    return {
        "collect": data["collect"]["steady_steps_per_s_median"],
        "updates": data["train"].get("updates_per_s"),
        "update_s_mean": 1 / compute if compute else None,
        "batch_len": data["train"].get("batch_seq_len_mean"),
        "launch": import_seconds(str(python), "amago", env) + data["startup_s"],
        "rss_gib": rss / 2**20,
        "load": data["loadavg_at_start"][0],
    }


def our_side(
    encoder: str, args: argparse.Namespace, out: Path, env: dict[str, str], actors: int = 16
) -> dict:
    warmup, updates = timed_updates(args, actors)
    cmd = [
        sys.executable, str(ROOT / "bench" / "throughput.py"), "--encoder", encoder,
        "--collect-calls", str(args.collect_calls), "--warmup", str(warmup), "--updates", str(updates),
        "--precision", args.precision, "--actors", str(actors), "--out", str(out),
    ]  # fmt: skip
    _, rss = run_measured(cmd, env)
    data = json.loads(out.read_text())
    return {
        "collect": data["collect_steps_per_s"],
        "ceiling": data["policy_ceiling_steps_per_s"],
        "updates": data["updates_per_s"],
        "update_s_mean": data["mean_update_s"],
        "batch_len": data["timed_batch_len_mean"],
        "update_flops": data["update_flops"],
        "update_flops_batch_len": data["update_flops_batch_len"],
        "step_flops": data["policy_step_flops"],
        "peak": data["peak_gflops"],
        "launch": import_seconds(sys.executable, "amago_core.experiment", env) + data["startup_s"],
        "rss_gib": rss / 2**20,
        "load": data["loadavg_at_start"][0],
    }


def amago_flops(python: Path, encoder: str, args: argparse.Namespace, out: Path, env: dict[str, str]) -> dict:
    """AMAGO's counted FLOPs per update and per policy step, and its torch's matmul peak (its own venv)."""
    cmd = [
        str(python), str(ROOT / "bench" / "flops_amago_ref.py"), "--encoder", encoder,
        "--baseline", str(BASELINE), "--collect-calls", str(args.collect_calls), "--out", str(out),
    ]  # fmt: skip
    run_measured(cmd, env)
    data = json.loads(out.read_text())
    return {
        "update_flops": data["update_flops"],
        "update_flops_batch_len": data["update_flops_batch_len"],
        "step_flops": data["policy_step_flops"],
        "peak": data["peak_gflops"],
    }


def utilisation_table(results: dict[str, dict[str, list[dict]]], counts: dict[str, dict]) -> list[str]:
    """Rows of the utilisation table: FLOPs, GFLOP/s and MFU of updates and collection, for both libraries.

    Args:
        results: Per encoder, each side's per-rep throughput figures (amago's carry its own FLOP counts).
        counts: Per encoder, AMAGO's FLOP counts (one counting run per encoder).
    """
    peaks = {
        "AMAGO": [c["peak"] for c in counts.values()],
        "amago": [f["peak"] for sides in results.values() for f in sides["amago"] if f.get("peak")],
    }
    if not peaks["AMAGO"] or not peaks["amago"]:
        return []
    best = {name: max(peaks[name], key=lambda p: p["fp32"]) for name in peaks}
    core = max(p["fp32"] for p in best.values())
    rows = [
        flops.peak_line(best["AMAGO"], "AMAGO v3.3.0's torch"),
        flops.peak_line(best["amago"], "amago's torch"),
        f"MFU below is against {core:.3g} GFLOP/s, the higher fp32 peak measured in this run (the core's).",
        f"{'encoder':11s} {'utilisation':26s} {'AMAGO v3.3.0':>24s} {'amago':>24s} {'ratio':>6s}",
    ]

    def cell(values: list[float]) -> str:
        """GFLOP/s: the median over reps, and their range when there are several."""
        gflops = [v / 1e9 for v in values]
        spread = f" [{min(gflops):.3g}-{max(gflops):.3g}]" if len(gflops) > 1 else ""
        return f"{statistics.median(gflops):.3g}{spread}"

    for encoder, sides in results.items():
        count = counts.get(encoder)
        ours = [f for f in sides["amago"] if f.get("update_flops")]
        if count is None or not ours or not sides["AMAGO"]:
            continue
        theirs_update = [
            count["update_flops"] / f["update_s_mean"] for f in sides["AMAGO"] if f["update_s_mean"]
        ]
        ours_update = [f["update_flops"] / f["update_s_mean"] for f in ours]
        theirs_collect = [count["step_flops"] * f["collect"] for f in sides["AMAGO"]]
        ours_collect = [f["step_flops"] * f["collect"] for f in ours]
        ours_flops = statistics.median(f["update_flops"] for f in ours)
        ours_step = statistics.median(f["step_flops"] for f in ours)
        ours_len = statistics.mean(x for f in ours for x in f["update_flops_batch_len"])
        timed_len = (
            statistics.mean(f["batch_len"] for f in sides["AMAGO"] if f["batch_len"]),
            statistics.mean(f["batch_len"] for f in ours),
        )
        their_len = statistics.mean(count["update_flops_batch_len"])
        pairs = (
            ("FLOPs / update (counted)", flops.gflop(count["update_flops"]), flops.gflop(ours_flops),
             ours_flops / count["update_flops"]),
            ("batch len counted/timed", f"{their_len:.0f} / {timed_len[0]:.0f}", f"{ours_len:.0f} / {timed_len[1]:.0f}",
             None),
            ("update GFLOP/s", cell(theirs_update), cell(ours_update),
             statistics.median(ours_update) / statistics.median(theirs_update)),
            ("update MFU (fp32)", f"{statistics.median(theirs_update) / 1e9 / core:.0%}",
             f"{statistics.median(ours_update) / 1e9 / core:.0%}", None),
            ("FLOPs / policy step", flops.gflop(count["step_flops"]), flops.gflop(ours_step),
             ours_step / count["step_flops"]),
            ("collection GFLOP/s", cell(theirs_collect),
             cell(ours_collect),
             statistics.median(ours_collect) / statistics.median(theirs_collect)),
            ("collection MFU (fp32)", f"{statistics.median(theirs_collect) / 1e9 / core:.1%}",
             f"{statistics.median(ours_collect) / 1e9 / core:.1%}", None),
        )  # fmt: skip
        for label, theirs, mine, ratio in pairs:
            shown = f"{ratio:6.2f}" if ratio is not None else ""
            rows.append(f"{encoder:11s} {label:26s} {theirs:>24s} {mine:>24s} {shown:>6s}")
    return rows


def race_amago(python: Path, seed: int, minutes: float, out_dir: Path, env: dict[str, str]) -> dict:
    """AMAGO's T-Maze H=30 run (its example's recipe); the figures at its first validation return of 1.0."""
    run_env = {
        **env,
        "AMAGO_REF_PYTHON": str(python),
        "OUT_DIR": str(out_dir),
        "SEED": str(seed),
        "MINUTES": str(minutes),
    }
    run_measured(["bash", str(BASELINE / "run_learning.sh"), "tmaze30"], run_env)
    data = json.loads((out_dir / f"learn_tmaze30_seed{seed}.json").read_text())
    first = data.get("first_success")
    if first is None:
        return {"solved": False, "minutes": minutes, "load": os.getloadavg()[0]}
    return {
        "solved": True,
        "env_steps": first["env_steps"],
        "updates": first["grad_steps"],
        "minutes": first["wall_s"] / 60,
        "load": os.getloadavg()[0],
    }


def race_ours(seed: int, minutes: float, out_dir: Path, env: dict[str, str]) -> dict:
    """amago's T-Maze H=30 run (``bench/learn.py tmaze-h30``); the figures at its first val return of 1.0."""
    out = out_dir / f"amago_tmaze30_seed{seed}.json"
    cmd = [sys.executable, str(ROOT / "bench" / "learn.py"), "tmaze-h30", "--seed", str(seed)]
    cmd += ["--minutes", str(minutes), "--out", str(out)]
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=False)  # exit 1: not solved in time
    data = json.loads(out.read_text())
    if not data["reached"]:
        return {"solved": False, "minutes": minutes, "load": os.getloadavg()[0]}
    return {
        "solved": True,
        "env_steps": data["env_steps"],
        "updates": data["updates"],
        "minutes": data["minutes"],
        "load": os.getloadavg()[0],
    }


def race_table(races: dict[str, list[dict]]) -> list[str]:
    """Rows of the T-Maze race: each side's figures per seed, then the ratio of the medians."""
    rows = [f"{'T-Maze H=30 race':34s} {'AMAGO v3.3.0':>22s} {'amago':>22s} {'ratio':>6s}  load (1 min)"]
    for key, label in (
        ("env_steps", "env steps to val 1.0"),
        ("updates", "updates to val 1.0"),
        ("minutes", "minutes to val 1.0"),
    ):
        theirs = [r[key] for r in races["AMAGO"] if r["solved"]]
        ours = [r[key] for r in races["amago"] if r["solved"]]
        unsolved = sum(not r["solved"] for r in races["AMAGO"] + races["amago"])
        if not theirs or not ours:
            rows.append(f"{label:34s} (a side never solved it: {unsolved} unsolved runs)")
            continue
        ratio = statistics.median(ours) / statistics.median(theirs)
        loads = [r["load"] for r in races["AMAGO"] + races["amago"]]
        note = f"  ({unsolved} unsolved)" if unsolved else ""
        rows.append(
            f"{label:34s} {spread(theirs):>22s} {spread(ours):>22s} {ratio:6.2f}  "
            f"{min(loads):.2f}-{max(loads):.2f}  (lower is better){note}"
        )
    return rows


def spread(values: list[float]) -> str:
    """``median [min-max]``, whole numbers from 1,000 up (env steps, updates), 3 significant digits below."""

    def shown(value: float) -> str:
        return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"

    return f"{shown(statistics.median(values))} [{shown(min(values))}-{shown(max(values))}]"


def config_key(encoder: str, actors: int) -> str:
    """Results key: the encoder at the default 16 actors, ``encoder@N`` at N actors."""
    return encoder if actors == 16 else f"{encoder}@{actors}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--encoders", nargs="+", default=["ff", "rnn", "transformer"])
    parser.add_argument("--collect-calls", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--updates", type=int, default=30)
    parser.add_argument(
        "--precision",
        choices=["no", "bf16"],
        default="no",
        help="amago's side only (AMAGO's script runs fp32)",
    )
    parser.add_argument("--race-seeds", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--race-minutes", type=float, default=12.0, help="time box of one race run")
    parser.add_argument(
        "--more-actors",
        type=int,
        nargs="*",
        default=[32, 64],
        help="also measure collection (only) with these many parallel envs (larger batches per policy call)",
    )
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-race", action="store_true")
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv-amago-ref")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "vs_amago.json")
    args = parser.parse_args()
    python = ensure_baseline(args.venv)
    env = {**os.environ, **ONE_THREAD}
    # Keys: the encoder (16 actors, every figure), and "encoder@N" (N actors, collection only).
    configs = [(e, n) for e in args.encoders for n in [16, *args.more_actors]]
    results: dict[str, dict[str, list[dict]]] = {config_key(*c): {"AMAGO": [], "amago": []} for c in configs}
    races: dict[str, list[dict]] = {"AMAGO": [], "amago": []}
    counts: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="vs-amago-") as scratch:
        for index, seed in enumerate([] if args.skip_race else args.race_seeds):
            for name in ["AMAGO", "amago"] if index % 2 == 0 else ["amago", "AMAGO"]:
                if name == "AMAGO":
                    figures = race_amago(python, seed, args.race_minutes, Path(scratch), env)
                else:
                    figures = race_ours(seed, args.race_minutes, Path(scratch), env)
                races[name].append(figures)
                print(f"race seed {seed} {name:5s} {json.dumps(figures)}", file=sys.stderr)
        for rep in range(0 if args.skip_throughput else args.reps):
            for encoder, actors in configs:
                key = config_key(encoder, actors)
                order = ["AMAGO", "amago"] if rep % 2 == 0 else ["amago", "AMAGO"]
                for name in order:
                    out = Path(scratch) / f"{name}-{key}-{rep}.json"
                    if name == "AMAGO":
                        figures = amago_side(python, encoder, args, out, env, actors)
                    else:
                        figures = our_side(encoder, args, out, env, actors)
                    results[key][name].append(figures)
                    print(f"rep {rep} {key:11s} {name:5s} {json.dumps(figures)}", file=sys.stderr)
                if rep == 0 and actors == 16:
                    # FLOPs depend on the configuration, not the rep: AMAGO's are counted once per encoder.
                    out = Path(scratch) / f"AMAGO-flops-{encoder}.json"
                    counts[encoder] = amago_flops(python, encoder, args, out, env)
                    print(f"flops {encoder:11s} AMAGO {json.dumps(counts[encoder])}", file=sys.stderr)
    rows = []
    header = (
        f"{'encoder':11s} {'figure':22s} {'AMAGO v3.3.0':>22s} {'amago':>22s} {'ratio':>6s}  load (1 min)"
    )
    for encoder, sides in results.items():
        for key, label, higher_is_better in (
            ("collect", "collection env-steps/s", True),
            ("updates", "gradient updates/s", True),
            ("launch", "launch to first step s", False),
            ("rss_gib", "peak RSS GiB", False),
        ):
            if "@" in encoder and key != "collect":
                continue  # other actor counts measure collection only
            theirs = [f[key] for f in sides["AMAGO"] if f[key] is not None]
            ours = [f[key] for f in sides["amago"] if f[key] is not None]
            if not theirs or not ours:
                continue
            ratio = statistics.median(ours) / statistics.median(theirs)
            loads = [f["load"] for f in sides["AMAGO"] + sides["amago"]]
            rows.append(
                f"{encoder:11s} {label:22s} {spread(theirs):>22s} {spread(ours):>22s} {ratio:6.2f}  "
                f"{min(loads):.2f}-{max(loads):.2f}" + ("" if higher_is_better else "  (lower is better)")
            )
    for encoder, sides in results.items():
        # How close collection comes to the policy alone (every row, one cached step, no envs): amago's side only.
        shares = [f["collect"] / f["ceiling"] for f in sides["amago"] if f.get("ceiling")]
        if shares:
            rows.append(f"{encoder:11s} amago collection / its policy-only ceiling: {spread(shares)}")
    utilisation = utilisation_table(results, counts)
    if utilisation:
        rows += ["", *utilisation]
    if races["AMAGO"] and races["amago"]:
        rows += ["", *race_table(races)]
    flags = [flag for flag, present in recorded_cpu_flags().items() if present]
    machine = (
        f"amago precision {args.precision} (AMAGO fp32: its script has no precision option); CPU flags: "
        f"{' '.join(flags) or 'none of ' + ', '.join(recorded_cpu_flags())}"
    )
    table = "\n".join([machine, header, *rows])
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "args": vars(args) | {"venv": str(args.venv), "out": str(args.out)},
                "results": results,
                "races": races,
                "amago_flops": counts,
                "table": table,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
