"""Learning side by side with AMAGO v3.3.0, with amago run exactly as a user types it.

For one task, the AMAGO side runs AMAGO's own example recipe (the baseline's ``run_learning.sh``, or the same
``amago_bench.py learn`` line with another ``--popgym_env`` where the script has no entry), time-boxed. The amago
side runs ``amago run --env ID --steps N --seed S`` plus only the options a user types to pick the same task (the
corridor length of T-Maze H=30), in a run folder under ``bench/out/learn_vs_amago/amago/``. Both at the same
env-step budget: N defaults to the most env steps an AMAGO run of the task reached (rounded up to 1,000).

Runs go one process at a time, one torch thread each, alternating sides seed by seed (AMAGO seed 1, amago seed 1,
AMAGO seed 2, ...); a run whose result is already on disk is not run again (``--rerun`` forces it). Each run
records ``os.getloadavg()`` at its start and end. ``--side AMAGO`` / ``--side amago`` runs one side only.

Per task it writes ``bench/out/learn_vs_amago/<task>.png`` (val return against env steps, one line per seed and
library) and ``<task>.md`` / ``<task>.json``, and prints the table: final env steps, env steps (and minutes) to
the target, val return at equal env steps (the smallest final env-step count of all runs of the task, nearest val
point), final val return, wall minutes and load averages.

The tasks with no AMAGO side (``tmaze10``, ``tmaze100``, ``popgym-hle``, ``popgym-mse``, ``popgym-aee``,
``popgym-aee-cpu``) are the rows of the README's own learning table: ``amago run`` as typed at the task's
``--steps``, nothing else.

Usage:
    uv run python bench/learn_vs_amago.py tmaze30 --dry-run      # the commands, nothing run
    uv run python bench/learn_vs_amago.py tmaze30                # both sides, seeds 1 and 2
    uv run python bench/learn_vs_amago.py popgym-rpe --side AMAGO
    uv run python bench/learn_vs_amago.py popgym-rpe --report-only

A benchmark, not a test: minutes per run, figures printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from vs_amago import BASELINE, ONE_THREAD, ROOT, ensure_baseline

OUT = ROOT / "bench" / "out" / "learn_vs_amago"
RETURN_KEY = "Average Total Return (Across All Env Names)"

# AMAGO's popgym line of run_learning.sh (examples/03_popgym_suite.py settings), kept verbatim so that another
# POPGym env (CountRecallEasy: AMAGO's example 03 with --popgym_env) runs the very same recipe.
POPGYM_RECIPE = [
    "--task", "popgym", "--parallel_actors", "12", "--timesteps_per_epoch", "104",
    "--batches_per_epoch", "104", "--val_interval", "1", "--val_timesteps", "104", "--success_return", "-0.3",
]  # fmt: skip
# run_learning.sh's ``common`` arguments.
COMMON = ["learn", "--encoder", "transformer", "--memory_size", "128", "--layers", "3", "--verbose_curve"]


@dataclass(frozen=True)
class Task:
    """One task on both sides.

    Attributes:
        name: The name of outputs (``<name>.png``).
        title: The plot and table title.
        recipe: ``run_learning.sh``'s entry, or None when the driver is called directly with ``driver_args``.
        json_stem: The stem of AMAGO's JSON (``run_learning.sh`` names it; kept for ``driver_args`` too).
        env_id: amago's env id.
        user_options: What a user adds to ``amago run`` to pick the same task.
        target: The val return that counts as solved (None: no target).
        minutes: AMAGO's time box.
        driver_args: The ``amago_bench.py`` arguments when ``recipe`` is None.
        steps: amago's ``--steps`` for a task with no AMAGO side.
        amago_side: False for a row of amago's own learning table (README "How fast it learns"): only
            ``amago run`` as typed, at ``steps`` env steps.
    """

    name: str
    title: str
    recipe: str | None
    json_stem: str
    env_id: str
    user_options: tuple[str, ...] = ()
    target: float | None = None
    minutes: float = 10.0
    driver_args: tuple[str, ...] = field(default_factory=tuple)
    steps: int | None = None
    amago_side: bool = True


TASKS = {
    task.name: task
    for task in (
        Task(
            "tmaze30", "T-Maze passive H=30", "tmaze30", "learn_tmaze30", "tmaze-passive",
            ("-o", "env.corridor_length=30"), target=0.999, minutes=12.0,
        ),
        Task(
            "popgym-rpe", "POPGym RepeatPreviousEasy", "popgym", "learn_popgym_rpe",
            "popgym-repeat-previous-easy", target=-0.3, minutes=10.0,
        ),
        Task(
            "popgym-cre", "POPGym CountRecallEasy", None, "learn_popgym_cre", "popgym-count-recall-easy",
            target=None, minutes=10.0,
            driver_args=(*POPGYM_RECIPE, "--popgym_env", "CountRecallEasy"),
        ),
        Task("frozenlake", "Meta-Frozen-Lake 5x5 k=10", "frozenlake", "learn_frozenlake", "frozen-lake",
             minutes=12.0),
        # amago alone, as typed (README "How fast it learns"). POPGym targets: 0.2 above a uniform random
        # policy's val return (bench/random_floor.py: 200 episodes through the same suite).
        Task("tmaze10", "T-Maze passive H=10 (the main job, `amago run`)", None, "", "", target=0.999,
             steps=12_000, amago_side=False),
        Task("tmaze100", "T-Maze passive H=100", None, "", "tmaze-passive", ("-o", "env.corridor_length=100"),
             target=0.999, steps=60_000, amago_side=False, minutes=30.0),
        Task("popgym-hle", "POPGym HigherLowerEasy (random -> 0.012)", None, "", "popgym-higher-lower-easy",
             target=0.212, steps=10_000, amago_side=False),
        Task("popgym-mse", "POPGym MineSweeperEasy (random -> -0.441)", None, "", "popgym-minesweeper-easy",
             target=-0.241, steps=20_000, amago_side=False),
        Task("popgym-aee", "POPGym AutoencodeEasy (random -> -0.512)", None, "", "popgym-autoencode-easy",
             target=-0.312, steps=60_000, amago_side=False, minutes=20.0),
        # The same task with the CPU recipe a user adds with -c (README: the POPGym preset decision).
        Task("popgym-aee-cpu", "POPGym AutoencodeEasy, -c examples/recipes/popgym-cpu.toml (random -> -0.512)",
             None, "", "popgym-autoencode-easy", ("-c", str(ROOT / "examples" / "recipes" / "popgym-cpu.toml")),
             target=-0.312, steps=60_000, amago_side=False, minutes=20.0),
    )
}  # fmt: skip


def loadavg() -> list[float]:
    """The 1/5/15-minute load averages, rounded for the table."""
    return [round(x, 2) for x in os.getloadavg()]


def amago_json(task: Task, seed: int) -> Path:
    """Where AMAGO's curve of ``seed`` lies (``run_learning.sh``'s naming: no suffix for seed 0)."""
    suffix = f"_seed{seed}" if seed else ""
    return OUT / "AMAGO" / f"{task.json_stem}{suffix}.json"


def amago_command(task: Task, seed: int, python: Path, minutes: float) -> tuple[list[str], dict[str, str]]:
    """AMAGO's command and its environment variables for one seed."""
    env = {
        **ONE_THREAD,
        "AMAGO_REF_PYTHON": str(python),
        "AMAGO_REF_SRC": str(BASELINE),
        "OUT_DIR": str(OUT / "AMAGO"),
        "SEED": str(seed),
        "MINUTES": str(minutes),
        "THREADS": "1",
    }
    if task.recipe is not None:
        return ["bash", str(BASELINE / "run_learning.sh"), task.recipe], env
    cmd = [
        str(python),
        str(BASELINE / "amago_bench.py"),
        *COMMON,
        "--minutes",
        str(minutes),
        "--threads",
        "1",
    ]
    cmd += ["--seed", str(seed), *task.driver_args, "--out", str(amago_json(task, seed))]
    return cmd, env


def ours_name(task: Task, seed: int) -> str:
    return f"{task.name}_seed{seed}"


def ours_dir(task: Task) -> Path:
    """The folder amago runs in: its default ``runs/`` folder lands under bench/out."""
    return OUT / "amago" / task.name


def ours_command(task: Task, seed: int, steps: int, budget_minutes: float | None = None) -> list[str]:
    """What a user types (the ``amago`` script of this venv; ``--name`` only to find the run folder again):
    ``--steps`` at AMAGO's env steps, or ``--budget`` at AMAGO's wall-time box."""
    amago = Path(sys.executable).with_name("amago")
    env = ["--env", task.env_id] if task.env_id else []  # no env: the embedded main job
    size = ["--budget", f"{budget_minutes:g}m"] if budget_minutes else ["--steps", str(steps)]
    cmd = [str(amago), "run", *env, *task.user_options, *size]
    return [*cmd, "--seed", str(seed), "--name", ours_name(task, seed)]


def shown_command(cmd: list[str], env: dict[str, str] | None = None) -> str:
    """A command as one shell line, paths shortened to the repository."""
    text = " ".join(shlex.quote(c) for c in cmd)
    if env:
        text = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + text
    return text.replace(str(ROOT) + "/", "").replace(str(Path(sys.executable).parent) + "/", "")


def run_amago(task: Task, seed: int, python: Path, minutes: float) -> dict:
    """Runs AMAGO's recipe for one seed; writes ``<json>.run.json`` (command, wall, load averages)."""
    cmd, extra = amago_command(task, seed, python, minutes)
    out = amago_json(task, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"cmd": shown_command(cmd, extra), "load_start": loadavg(), "started": time.time()}
    print(f"[AMAGO {task.name} seed {seed}] {meta['cmd']}", file=sys.stderr, flush=True)
    with out.with_suffix(".log").open("w") as log:
        rc = subprocess.run(cmd, env={**os.environ, **extra}, stdout=log, stderr=subprocess.STDOUT).returncode
    meta |= {"rc": rc, "wall_s": time.time() - meta["started"], "load_end": loadavg()}
    out.with_suffix(".run.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def code_state() -> dict:
    """The commit and a digest of the uncommitted changes: others edit amago while these runs go."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    diff = subprocess.run([*git, "diff", "HEAD", "--", "packages", "src"], capture_output=True).stdout
    changed = subprocess.run(
        [*git, "diff", "HEAD", "--stat", "--", "packages", "src"], capture_output=True, text=True
    )
    return {
        "head": head,
        "diff_sha1": hashlib.sha1(diff).hexdigest(),
        "diff_stat": changed.stdout.strip().splitlines()[-1:],
    }


def run_ours(
    task: Task, seed: int, steps: int, max_minutes: float, budget_minutes: float | None = None
) -> dict:
    """Runs ``amago run`` as typed for one seed, stamping each metrics.jsonl line with the wall time it appeared.

    Past ``max_minutes`` it gets SIGINT (amago saves and stops), as a user's Ctrl-C would.
    """
    cmd = ours_command(task, seed, steps, budget_minutes)
    cwd = ours_dir(task)
    run = cwd / "runs" / ours_name(task, seed)
    if run.exists():
        shutil.rmtree(run)  # a fresh run: an old folder with the same name would be refused or mixed in
    cwd.mkdir(parents=True, exist_ok=True)
    meta = {
        "cmd": shown_command(cmd),
        "cwd": str(cwd).replace(str(ROOT) + "/", ""),
        "steps": steps,
        "code": code_state(),
        "load_start": loadavg(),
        "started": time.time(),
    }
    print(f"[amago {task.name} seed {seed}] (in {meta['cwd']}) {meta['cmd']}", file=sys.stderr, flush=True)
    stamps: list[float] = []  # wall seconds at which metrics.jsonl line i was first seen
    metrics = run / "metrics.jsonl"
    stopped = "done"
    with (cwd / f"{ours_name(task, seed)}.log").open("w") as log:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env={**os.environ, **ONE_THREAD}, stdout=log, stderr=subprocess.STDOUT
        )
        interrupted_at = None
        while proc.poll() is None:
            time.sleep(1.0)
            now = time.time() - meta["started"]
            if metrics.exists():
                with metrics.open() as f:
                    lines = sum(1 for _ in f)
                stamps += [now] * (lines - len(stamps))
            if interrupted_at is None and now > 60 * max_minutes:
                proc.send_signal(signal.SIGINT)
                interrupted_at, stopped = now, "time_cap"
            elif interrupted_at is not None and now - interrupted_at > 90:
                proc.kill()
                stopped = "killed"
        meta["rc"] = proc.returncode
    meta |= {"wall_s": time.time() - meta["started"], "load_end": loadavg(), "stopped_by": stopped}
    if metrics.exists():
        with metrics.open() as f:
            lines = sum(1 for _ in f)
        stamps += [meta["wall_s"]] * (lines - len(stamps))
    meta["line_wall_s"] = stamps
    (cwd / f"{ours_name(task, seed)}.run.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


# ---------------------------------------------------------------------------------------------------------------
# curves and the table
# ---------------------------------------------------------------------------------------------------------------


def amago_curve(task: Task, seed: int) -> dict | None:
    """AMAGO's val curve of one seed: env steps, returns, wall seconds, and the run's figures; None if not run."""
    path = amago_json(task, seed)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    meta_path = path.with_suffix(".run.json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    vals = [r for r in data.get("curve", []) if r.get("key") == "val" and r.get(RETURN_KEY) is not None]
    return {
        "steps": [r["env_steps"] for r in vals],
        "returns": [r[RETURN_KEY] for r in vals],
        "wall_s": [r["wall_s"] for r in vals],
        "final_steps": max((r["env_steps"] for r in data.get("curve", [])), default=0),
        "updates": max((r["grad_steps"] for r in data.get("curve", [])), default=0),
        "stopped_by": data.get("stopped_by", "partial" if data.get("partial") else None),
        "run_wall_s": meta.get("wall_s"),
        "train_wall_s": data.get("train_wall_s"),
        "load_start": meta.get("load_start") or data.get("env", {}).get("loadavg_1_5_15"),
        "load_end": meta.get("load_end"),
        "cmd": meta.get("cmd"),
    }


def ours_curve(task: Task, seed: int) -> dict | None:
    """amago's val curve of one seed from its metrics.jsonl (``val/...`` records; the end-of-run ``test/...``
    record is the last point, as AMAGO's curve ends with its final validation)."""
    cwd = ours_dir(task)
    metrics = cwd / "runs" / ours_name(task, seed) / "metrics.jsonl"
    meta_path = cwd / f"{ours_name(task, seed)}.run.json"
    if not metrics.exists() or not meta_path.exists():
        return None
    meta = json.loads(meta_path.read_text())
    stamps = meta.get("line_wall_s", [])
    steps, returns, wall, kinds, final_steps, updates = [], [], [], [], 0, 0
    for i, line in enumerate(metrics.read_text().splitlines()):
        record = json.loads(line)
        final_steps = max(final_steps, int(record.get("total_frames", 0)))
        updates = max(updates, int(record.get("gradient_steps", 0)))
        for kind in ("val", "test"):
            value = record.get(f"{kind}/{RETURN_KEY}")
            if value is not None:
                steps.append(int(record["total_frames"]))
                returns.append(float(value))
                wall.append(stamps[i] if i < len(stamps) else None)
                kinds.append(kind)
    return {
        "steps": steps,
        "returns": returns,
        "wall_s": wall,
        "kinds": kinds,
        "final_steps": final_steps,
        "updates": updates,
        "stopped_by": meta.get("stopped_by"),
        "run_wall_s": meta.get("wall_s"),
        "load_start": meta.get("load_start"),
        "load_end": meta.get("load_end"),
        "cmd": meta.get("cmd"),
        "budget_steps": meta.get("steps"),
    }


def nearest(curve: dict, at: int) -> tuple[float | None, int | None]:
    """The val return of the point nearest ``at`` env steps (ties: the earlier point) and its env steps."""
    if not curve["steps"]:
        return None, None
    i = min(range(len(curve["steps"])), key=lambda j: (abs(curve["steps"][j] - at), curve["steps"][j]))
    return curve["returns"][i], curve["steps"][i]


def to_target(curve: dict, target: float | None) -> tuple[int | None, float | None]:
    """Env steps and wall minutes at the first val return >= ``target``."""
    if target is None:
        return None, None
    for step, ret, wall in zip(curve["steps"], curve["returns"], curve["wall_s"], strict=True):
        if ret >= target:
            return step, (wall / 60 if wall is not None else None)
    return None, None


def fmt(value: float | None, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)


def report(task: Task, seeds: list[int]) -> dict:
    """Builds the PNG, the markdown and JSON table of one task from what is on disk; prints the table."""
    curves = {("AMAGO", seed): amago_curve(task, seed) for seed in seeds} | {
        ("amago", seed): ours_curve(task, seed) for seed in seeds
    }
    present = {key: c for key, c in curves.items() if c is not None and c["steps"]}
    if not present:
        print(f"{task.name}: nothing run yet", file=sys.stderr)
        return {}
    # A run still going (AMAGO's JSON is rewritten at every validation) does not set the equal env steps.
    finished = [c["final_steps"] for c in present.values() if c["stopped_by"] not in (None, "partial")]
    equal = min(finished or [c["final_steps"] for c in present.values()])
    rows = []
    for (side, seed), c in sorted(present.items()):
        steps_t, min_t = to_target(c, task.target)
        ret_eq, at = nearest(c, equal)
        wall = c["run_wall_s"]
        rows.append(
            {
                "side": side,
                "seed": seed,
                "final_env_steps": c["final_steps"],
                "updates": c["updates"],
                "val_points": len(c["steps"]),
                "env_steps_to_target": steps_t,
                "minutes_to_target": min_t,
                "return_at_equal_steps": ret_eq,
                "equal_steps_point": at,
                "final_return": c["returns"][-1],
                "wall_minutes": wall / 60 if wall is not None else None,
                "stopped_by": c["stopped_by"],
                "load_start": c["load_start"],
                "load_end": c["load_end"],
                "cmd": c["cmd"],
            }
        )
    header = (
        f"| side | seed | final env steps | updates | val points | env steps to target | min to target "
        f"| return @ {equal:,} steps (point) | final return | wall min | stopped by | load start → end |"
    )
    lines = [
        f"### {task.title} (target {task.target if task.target is not None else '—'})",
        "",
        header,
        "|" + "---|" * 12,
    ]
    for r in rows:
        load = f"{fmt(r['load_start'] and r['load_start'][0], '.2f')} → {fmt(r['load_end'] and r['load_end'][0], '.2f')}"
        lines.append(
            f"| {r['side']} | {r['seed']} | {r['final_env_steps']:,} | {r['updates']:,} | {r['val_points']} "
            f"| {fmt(r['env_steps_to_target'], ',')} | {fmt(r['minutes_to_target'], '.1f')} "
            f"| {fmt(r['return_at_equal_steps'])} ({fmt(r['equal_steps_point'], ',')}) | {fmt(r['final_return'])} "
            f"| {fmt(r['wall_minutes'], '.1f')} | {r['stopped_by']} | {load} |"
        )
    lines += ["", "Commands:", ""] + [f"- {r['side']} seed {r['seed']}: `{r['cmd']}`" for r in rows]
    table = "\n".join(lines)
    print(table)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{task.name}.md").write_text(table + "\n")
    (OUT / f"{task.name}.json").write_text(
        json.dumps({"task": task.name, "equal_env_steps": equal, "target": task.target, "rows": rows,
                    "curves": {f"{s}-{n}": c for (s, n), c in present.items()}}, indent=1) + "\n"
    )  # fmt: skip
    plot(task, present, equal)
    return {"equal": equal, "rows": rows}


def plot(task: Task, curves: dict, equal: int) -> None:
    """One PNG: val return against env steps, one line per library and seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    colours = {"AMAGO": "tab:blue", "amago": "tab:orange"}
    styles = ["-", "--", ":", "-."]
    for (side, seed), c in sorted(curves.items()):
        label = "AMAGO v3.3.0 (recipe)" if side == "AMAGO" else "amago run (as typed)"
        ax.plot(c["steps"], c["returns"], styles[(seed - 1) % 4], marker="o", ms=3, color=colours[side],
                label=f"{label}, seed {seed}")  # fmt: skip
        # amago's last point is its end-of-run test pass (val runs only every few epochs under --steps).
        tests = [i for i, kind in enumerate(c.get("kinds", [])) if kind == "test"]
        ax.plot(
            [c["steps"][i] for i in tests], [c["returns"][i] for i in tests], "*", ms=10, color=colours[side]
        )
    if task.target is not None:
        ax.axhline(task.target, color="grey", lw=0.8, ls=":", label=f"target {task.target}")
    ax.axvline(equal, color="black", lw=0.6, ls="--", label=f"equal env steps {equal:,}")
    ax.set_xlabel("env steps (all actors)")
    ax.set_ylabel("val return (amago's last point, a star: its end-of-run test pass)")
    versus = "AMAGO recipe vs " if task.amago_side else ""
    ax.set_title(f"{task.title}: {versus}`amago run` as typed")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / f"{task.name}.png", dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------------------


def default_steps(task: Task, seeds: list[int]) -> int | None:
    """The most env steps an AMAGO run of the task reached, rounded up to 1,000 (None: no AMAGO run yet); an
    amago-only task's own ``steps``."""
    if not task.amago_side:
        return task.steps
    finals = [c["final_steps"] for c in (amago_curve(task, s) for s in seeds) if c is not None]
    return int(math.ceil(max(finals) / 1000) * 1000) if finals else None


def main() -> None:
    # One switch for every path helper, so that smoke tests write away from the real results.
    global OUT
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task", choices=list(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--side", choices=["both", "AMAGO", "amago"], default="both")
    parser.add_argument("--minutes", type=float, help="AMAGO's time box (default: the task's)")
    parser.add_argument("--steps", type=int, help="amago's --steps (default: AMAGO's most env steps)")
    parser.add_argument(
        "--budget",
        type=float,
        help="amago's --budget in minutes instead of --steps: the same wall-time box as AMAGO's (a preset "
        "that updates far more per env step than AMAGO's recipe cannot reach its env steps in the box)",
    )
    parser.add_argument("--max-minutes", type=float, help="Ctrl-C amago past this (default: 1.5 x the box)")
    parser.add_argument("--rerun", action="store_true", help="run again what is already on disk")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv-amago-ref")
    parser.add_argument("--out-dir", type=Path, default=OUT, help="where runs and tables go (smoke tests)")
    args = parser.parse_args()
    OUT = args.out_dir.resolve()
    task = TASKS[args.task]
    minutes = args.minutes or task.minutes
    max_minutes = args.max_minutes or 1.5 * minutes
    needs_baseline = task.amago_side and args.side != "amago" and not args.dry_run
    python = ensure_baseline(args.venv) if needs_baseline else args.venv / "bin" / "python"
    for seed in [] if args.report_only else args.seeds:
        for side in ("AMAGO", "amago"):
            if args.side not in ("both", side) or (side == "AMAGO" and not task.amago_side):
                continue
            if side == "AMAGO":
                done = amago_json(task, seed).exists() and not json.loads(
                    amago_json(task, seed).read_text()
                ).get("partial", True)
                if args.dry_run:
                    cmd, extra = amago_command(task, seed, python, minutes)
                    print(f"AMAGO seed {seed}{' (done)' if done else ''}: {shown_command(cmd, extra)}")
                elif not done or args.rerun:
                    print(json.dumps(run_amago(task, seed, python, minutes)), file=sys.stderr, flush=True)
                continue
            done = (ours_dir(task) / f"{ours_name(task, seed)}.run.json").exists()
            steps = args.steps or default_steps(task, args.seeds)
            if args.dry_run:
                shown = shown_command(ours_command(task, seed, steps or 0, args.budget))
                print(f"amago seed {seed}{' (done)' if done else ''} (in {ours_dir(task)}): {shown}")
                continue
            if done and not args.rerun:
                continue
            if steps is None and not args.budget:
                raise SystemExit(
                    "no AMAGO run to size amago's budget from: run --side AMAGO first or pass --steps"
                )
            meta = run_ours(task, seed, steps or 0, max_minutes, args.budget)
            print(
                json.dumps({k: v for k, v in meta.items() if k != "line_wall_s"}), file=sys.stderr, flush=True
            )
    if not args.dry_run:
        report(task, args.seeds)


if __name__ == "__main__":
    main()
