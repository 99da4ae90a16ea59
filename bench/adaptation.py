"""Success by attempt past the trained attempts, for trained runs, as a user measures it (issue 43 item 5).

For each run folder (a seed group's ``seed_K`` folders are found by themselves) this runs, one process at a
time::

    amago eval RUN --attempts K --episodes N [--context L] [--tasks T]

and keeps the JSON each prints (``bench/out/adaptation/<group>-<run>[-context L][-T].json``). Then it prints
one Markdown table per group (attempt x run: mean with its 95 % interval over trials, plus the mean over
runs), each run's verdict line, the machine (CPU flags, load average before and after each evaluation) and
draws one PNG with a panel per group (``--png``). It trains nothing: train first, e.g.::

    amago run --env frozen_lake -o env.k_episodes=4 -o env.show_k_progress=false --budget 60m --seeds 2 \\
        --parallel 2 --name fl-k4-60m
    python bench/adaptation.py runs/fl-k4-60m --attempts 10 --episodes 100 --png docs/images/adaptation.png

An evaluation already on disk with the same command is not run again (``--rerun`` forces it).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out" / "adaptation"


def run_folders(path: Path) -> list[Path]:
    """``path`` itself when it is a run (it has ``config.resolved.json``), else its ``seed_*`` runs."""
    if (path / "config.resolved.json").is_file():
        return [path]
    seeds = sorted(p for p in path.glob("seed_*") if (p / "config.resolved.json").is_file())
    if not seeds:
        sys.exit(f"adaptation: {path} is neither a run folder nor a seed group with finished seed_K runs")
    return seeds


def cpu_flags() -> str:
    """The CPU flags amago's runs record that this machine has (the brief asks every figure to name them)."""
    from amago_core.experiment.hardware import recorded_cpu_flags

    return " + ".join(flag for flag, present in recorded_cpu_flags().items() if present) or "none recorded"


def evaluate(run: Path, args: argparse.Namespace, label: str) -> dict[str, Any]:
    """Runs ``amago eval`` on ``run`` (or reads its earlier result) and returns the printed JSON plus how it ran."""
    command = [str(REPO / ".venv" / "bin" / "amago"), "eval", str(run), "--attempts", str(args.attempts)]
    # One torch thread: the machine is shared and the policy is small (the brief's rule for small models).
    command += ["--episodes", str(args.episodes), "--tasks", args.tasks, "-o", "run.torch_threads=1"]
    if args.context:
        command += ["--context", str(args.context)]
    saved = OUT / f"{label}.json"
    if saved.is_file() and not args.rerun:
        done = json.loads(saved.read_text())
        if done.get("command") == command:
            return done
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(
            f"adaptation: {shlex.join(command)} failed ({result.returncode}): {result.stderr.strip()[-500:]}"
        )
    done = {
        "command": command,
        "eval": json.loads(result.stdout),
        "stderr": result.stderr.strip().splitlines(),
        "seconds": round(time.monotonic() - start, 1),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu_flags": cpu_flags(),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(done, indent=1) + "\n")
    return done


def cell(row: dict[str, Any]) -> str:
    """``mean [low, high]`` of one attempt, ``-`` when no trial reached it."""
    if row["mean"] is None:
        return "-"
    if row["low"] is None:
        return f"{row['mean']:.2f}"
    return f"{row['mean']:.2f} [{row['low']:.2f}, {row['high']:.2f}]"


def table(group: str, results: dict[str, dict[str, Any]]) -> str:
    """One group's Markdown table: attempt x run, and the mean over runs."""
    reports = {name: r["eval"]["attempts"] for name, r in results.items()}
    first = next(iter(reports.values()))
    metric, trained = first["metric"], first["trained_attempts"]
    head = f"| attempt | {' | '.join(reports)} | mean over runs |"
    lines = [
        f"**{group}** ({metric} by attempt; trained with {trained} attempts, context {first['context']})",
        "",
    ]
    lines += [head, "|" + "---|" * (len(reports) + 2)]
    for index in range(first["attempts"]):
        rows = [report["rows"][index] for report in reports.values()]
        means = [row["mean"] for row in rows if row["mean"] is not None]
        pooled = f"{sum(means) / len(means):.2f}" if means else "-"
        marker = " (trained)" if trained and index + 1 <= trained else ""
        lines.append(f"| {index + 1}{marker} | {' | '.join(cell(row) for row in rows)} | {pooled} |")
    lines.append("")
    for name, result in results.items():
        report = result["eval"]["attempts"]
        lines.append(
            f"- {name}: {report['trials']} trials; {report['verdict']} (eval {result['seconds']} s, load "
            f"{result['load_before']:.2f} -> {result['load_after']:.2f}, {result['date']}, {result['cpu_flags']})"
        )
    return "\n".join(lines)


def draw(groups: dict[str, dict[str, dict[str, Any]]], path: Path) -> None:
    """One panel per group: each run's mean by attempt with its 95 % interval, the trained attempts marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(groups), figsize=(6 * len(groups), 4), squeeze=False)
    for ax, (group, results) in zip(axes[0], groups.items(), strict=True):
        for name, result in results.items():
            report = result["eval"]["attempts"]
            rows = [r for r in report["rows"] if r["mean"] is not None]
            xs = [r["attempt"] for r in rows]
            (line,) = ax.plot(
                xs, [r["mean"] for r in rows], marker="o", label=f"{name} ({report['trials']} trials)"
            )
            bounded = [r for r in rows if r["low"] is not None]
            ax.fill_between(
                [r["attempt"] for r in bounded],
                [r["low"] for r in bounded],
                [r["high"] for r in bounded],
                alpha=0.15,
                color=line.get_color(),
            )
        trained = next(iter(results.values()))["eval"]["attempts"]["trained_attempts"]
        if trained:
            ax.axvline(trained + 0.5, color="grey", linestyle="--", label=f"trained: {trained} attempts")
        ax.set_xlabel("attempt")
        ax.set_ylabel(f"mean {next(iter(results.values()))['eval']['attempts']['metric']} (95 % interval)")
        ax.set_title(group)
        ax.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="+", type=Path, help="run folders or seed groups (runs/NAME)")
    parser.add_argument("--attempts", type=int, default=10, help="attempts per evaluated trial")
    parser.add_argument("--episodes", type=int, default=100, help="trials evaluated per run")
    parser.add_argument(
        "--context", type=int, help="memory window to evaluate with (default: the trained one)"
    )
    parser.add_argument("--tasks", default="test", help="test, val, train or unseen (as amago eval)")
    parser.add_argument("--png", type=Path, help="write the figure here")
    parser.add_argument("--rerun", action="store_true", help="evaluate again even when a result is on disk")
    args = parser.parse_args()

    suffix = (f"-context{args.context}" if args.context else "") + (
        "" if args.tasks == "test" else f"-{args.tasks}"
    )
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for group in args.groups:
        groups[group.name] = {
            run.name: evaluate(run, args, f"{group.name}-{run.name}{suffix}") for run in run_folders(group)
        }
        print(table(group.name, groups[group.name]), end="\n\n", flush=True)
    if args.png:
        draw(groups, args.png)
        print(f"figure: {args.png}")


if __name__ == "__main__":
    main()
