"""`amago bench memory`'s report: each run's score and speed, the normalised scores, rliable's statistics, and
``bench.md``, ``bench.png`` and the results in ``bench.json``.

A run's score is what a sweep trial's is (:func:`amago_studies.sweep.trial_score`): the mean of its last ``--last``
val returns logged after its first gradient update. Per task it is normalised as ``(score - floor) / (best -
floor)``: ``floor`` a random policy's mean return (:func:`amago_studies.bench_memory.measure_floor`), ``best`` the
task's ``--best`` value, else its env suite's ``best_known_return()``, else the best score any run of the bench
reached. IQM (across tasks and seeds: a runs x
tasks matrix per memory) and the probability of improvement over the baseline, each with its stratified-bootstrap
95 % interval, are :mod:`amago_studies.compare`'s (rliable). Torch-free; numpy, rliable and matplotlib load here.
"""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from amago_core.experiment.metrics import AVERAGE_RETURN_KEY, WALL_TIME_KEY
from amago_core.io import atomic_write, atomic_write_json, atomic_write_text
from amago_studies.bench_memory import FLOORS_FILE, Group, Settings, task_folder
from amago_tools.plotting import FRAMES, GRADIENT_STEPS

RETURN_METRIC = f"val/{AVERAGE_RETURN_KEY}"
POLICY_FPS_METRIC = "val/Env FPS (per_process)"
"""Validation's env steps per second: the policy acting alone (no learning), per process."""
TAIL_BYTES = 65_536
"""How much of a run's metrics.jsonl is read for its last counters (the file of a long run is large)."""
FLOOR_STEP_CAP = 500_000
"""The most env steps one task's floor takes: an env whose episodes never end gets a floor of the episodes that
did (or none), not a driver that never returns."""
FLOOR_SEED = 0
TIED = 1e-9
GIB = 2**30


def _number(value: Any) -> float | None:
    """``value`` when it is a number (an int stays one), else None: a record read from a folder may hold anything."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def last_counters(metrics: Path) -> dict[str, float]:
    """The training wall time, gradient steps and env steps of a run's last record that has all three."""
    try:
        with metrics.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - TAIL_BYTES))
            chunk = handle.read()
    except OSError:
        return {}
    for line in reversed(chunk.splitlines()):
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue  # a line cut short, or the first one of the tail
        if isinstance(record, dict):
            numbers = {key: _number(record.get(key)) for key in (WALL_TIME_KEY, GRADIENT_STEPS, FRAMES)}
            if all(value is not None for value in numbers.values()):
                return {key: float(value) for key, value in numbers.items() if value is not None}
    return {}


def run_numbers(run_dir: Path, last: int) -> dict[str, Any]:
    """A run's score (``None`` without a val return) and speed, read from its ``metrics.jsonl``."""
    from amago_studies.sweep import ObjectiveReader, trial_score

    metrics = run_dir / "metrics.jsonl"
    reader = ObjectiveReader(metrics, RETURN_METRIC)
    scored = trial_score(reader.read(), reader.untrained, last)
    rates = [value for _, value in ObjectiveReader(metrics, POLICY_FPS_METRIC).read()]
    counters = last_counters(metrics)
    wall = counters.get(WALL_TIME_KEY, 0.0)
    return {
        "score": None if scored is None else scored.value,
        "evaluations": None if scored is None else scored.evaluations,
        "untrained_only": None if scored is None else scored.untrained,
        "updates_per_second": counters[GRADIENT_STEPS] / wall if wall > 0 else None,
        "env_steps_per_second": counters[FRAMES] / wall if wall > 0 else None,
        "policy_steps_per_second": statistics.median(rates) if rates else None,
    }


def _median(values: Sequence[Any]) -> float | None:
    numbers = [value for value in values if isinstance(value, int | float)]
    return float(statistics.median(numbers)) if numbers else None


def _group_codes(group: Group) -> dict[str, int]:
    """Each seed's exit code as the group's record holds it (what decides which seeds have finished)."""
    if group.problem is not None or not group.seeds.record.is_file():
        return {}
    try:
        return dict(group.seeds.read_record()["exit_codes"])
    except ValueError:  # a record broken since the runs: they count as not run
        return {}


STOPPED_EXIT_CODES = frozenset(128 + int(stop) for stop in (signal.SIGINT, signal.SIGTERM))
"""Exit codes of a run stopped by Ctrl-C or SIGTERM (128 + the signal's number, as `amago run` exits then): it
saved a checkpoint on the way out, so it is stopped, not failed, and the bench resumes it."""


def _missing(group: Group, seed: int, code: int | None, run: Mapping[str, Any]) -> str | None:
    """Why a planned run has no score, or None when it has one."""
    if group.problem is not None:
        return f"cannot start: {group.problem}"
    if code in STOPPED_EXIT_CODES:
        return f"stopped (exit {code}); the same command resumes it from its last checkpoint"
    if code is not None and code != 0:
        return f"failed (exit {code}); its log: {group.seeds.log(seed)}"
    if code is None:
        return "not run yet (stopped before it, or it is running)"
    if run.get("score") is None:
        return f"logged no {RETURN_METRIC!r}"
    return None


BEST_SOURCES = {
    "given": "--best",
    "suite": "the env suite's best known return",
    "bench": "best in this bench",
}
"""Where a task's ``best`` comes from (its ``best_source``), first found first: the user's ``--best``, the suite's
``EnvSuiteConfig.best_known_return()``, the best score any run of the bench reached."""


def _task_scale(
    floor: Mapping[str, Any] | None, scores: Sequence[float], given: float | None, known: float | None
) -> dict[str, Any]:
    """A task's floor, best and whether its scores normalise (with the reason when they do not)."""
    low = _number(floor.get("mean_return")) if floor else None
    top = max(scores) if scores else None
    high: float | None
    if given is not None:
        source, high = "given", given
    elif known is not None:
        source, high = "suite", known
    else:
        source, high = "bench", top
    note = None
    if low is None:
        note = "its random floor could not be measured"
    elif high is None or not scores:
        note = "no run of it has a score"
    elif high - low <= TIED * max(1.0, abs(low), abs(high)):
        note = f"no run beat the random floor (best {high:.4g}, floor {low:.4g})"
    # A known best normalises a task that nothing learned as well (its scores read about 0): say so all the same.
    unbeaten = note is None and source != "bench" and top is not None and low is not None and top <= low
    return {
        "floor": dict(floor) if floor else None,
        "best": high,
        "best_source": source,
        "normalised": note is None,
        "note": note,
        "remark": f"no run beat the random floor (best score {top:.4g}, floor {low:.4g})"
        if unbeaten
        else None,
    }


def statistics_table(
    matrices: Mapping[str, Any], baseline: str, reps: int, seed: int
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, float]]]:
    """rliable's aggregates per memory and each memory's probability of improvement over ``baseline``."""
    from amago_studies.compare import improvement, interval_table

    table = interval_table(dict(matrices), None, reps, seed) if matrices else {}
    better: dict[str, dict[str, float]] = {}
    for memory, matrix in matrices.items():
        if memory == baseline or baseline not in matrices:
            continue
        pair = improvement({memory: matrix, baseline: matrices[baseline]}, reps, seed)
        found = next(p for p in pair if p["x"] == memory)
        better[memory] = {"probability": found["probability"], "low": found["low"], "high": found["high"]}
    return table, better


def results(
    settings: Settings,
    groups: Sequence[Group],
    record: Mapping[str, Any],
    floors: Mapping[str, Mapping[str, Any]],
    *,
    baseline: str,
    best: Mapping[str, float],
    last: int,
    reps: int,
    seed: int,
    machine: Mapping[str, Any],
) -> dict[str, Any]:
    """Every run's numbers, each task's scale, and per memory its table row (see the module's docstring)."""
    import numpy as np

    runs: list[dict[str, Any]] = []
    for group in groups:
        codes = _group_codes(group)
        for k in settings.seeds:
            entry = record.get("runs", {}).get(f"{task_folder(group.task)}/{group.memory}/seed_{k}", {})
            numbers = run_numbers(group.seeds.run_dir(k), last) if group.problem is None else {}
            runs.append(
                {
                    "task": group.task,
                    "memory": group.memory,
                    "seed": k,
                    "run_dir": str(group.seeds.run_dir(k)),
                    "exit_code": codes.get(str(k)),
                    **{key: _number(entry.get(key)) for key in ("peak_rss_bytes", "seconds", "tries")},
                    **numbers,
                    "missing": _missing(group, k, codes.get(str(k)), numbers),
                }
            )
    scored = [run for run in runs if run["missing"] is None]
    known = {group.task: group.best_known for group in groups if group.best_known is not None}
    tasks = {
        task: _task_scale(
            floors.get(task),
            [r["score"] for r in scored if r["task"] == task],
            best.get(task),
            known.get(task),
        )
        for task in settings.tasks
    }
    for run in runs:
        scale = tasks[run["task"]]
        run["normalised"] = (
            (run["score"] - scale["floor"]["mean_return"]) / (scale["best"] - scale["floor"]["mean_return"])
            if run["missing"] is None and scale["normalised"]
            else None
        )
    kept = [task for task in settings.tasks if tasks[task]["normalised"]]
    normalised = {
        (r["task"], r["memory"], r["seed"]): r["normalised"] for r in runs if r["normalised"] is not None
    }
    matrices: dict[str, Any] = {}
    for memory in settings.memories:
        rows = [
            [normalised[task, memory, k] for task in kept]
            for k in settings.seeds
            if all((task, memory, k) in normalised for task in kept)
        ]
        if kept and rows:
            matrices[memory] = np.array(rows, dtype=float)  # seeds x tasks
    table, better = statistics_table(matrices, baseline, reps, seed)
    memories = {}
    for memory in settings.memories:
        mine = [run for run in runs if run["memory"] == memory]
        per_task = {}
        for task in settings.tasks:
            values = [
                r["normalised"] if tasks[task]["normalised"] else r["score"]
                for r in mine
                if r["task"] == task and r["missing"] is None
            ]
            per_task[task] = {
                "mean": float(np.mean(values)) if values else None,
                "sd": float(np.std(values, ddof=1)) if len(values) > 1 else None,
                "n": len(values),
                "normalised": tasks[task]["normalised"],
                "raw": [r["score"] for r in mine if r["task"] == task and r["missing"] is None],
            }
        memories[memory] = {
            "per_task": per_task,
            "rows": len(matrices[memory]) if memory in matrices else 0,
            "aggregates": table.get(memory),
            "probability_of_improvement": better.get(memory),
            **{
                key: _median([r.get(key) for r in mine])
                for key in (
                    "updates_per_second",
                    "env_steps_per_second",
                    "policy_steps_per_second",
                    "peak_rss_bytes",
                )
            },
            "runs_scored": sum(r["missing"] is None for r in mine),
            "runs_planned": len(mine),
        }
    return {
        "written": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": dict(machine),
        "sessions": record.get("sessions", []),
        "score": {
            "metric": RETURN_METRIC,
            "last": last,
            "rule": "mean of a run's last evaluations after its first gradient update (as a sweep trial's score)",
        },
        "baseline": baseline,
        "reps": reps,
        "seed": seed,
        "confidence": 0.95,
        "tasks_in_statistics": kept,
        "tasks": tasks,
        "memories": memories,
        "runs": runs,
        "missing": [
            f"{r['memory']} on {r['task']} seed {r['seed']}: {r['missing']}" for r in runs if r["missing"]
        ],
    }


def _fmt(value: Any, digits: int = 3) -> str:
    if not isinstance(value, int | float):
        return "—"
    return f"{value:,.0f}" if abs(value) >= 10**digits else f"{value:.{digits}g}"


def _interval(cell: Mapping[str, float] | None, key: str = "estimate") -> str:
    return "—" if not cell else f"{_fmt(cell[key])} [{_fmt(cell['low'])}, {_fmt(cell['high'])}]"


def _header(result: Mapping[str, Any]) -> str:
    """The machine line: date, cores, the load of the sessions that trained, CPU and its recorded flags."""
    m = result["machine"]
    flags = " ".join(name for name, present in m.get("cpu_flags", {}).items() if present) or "none of them"
    trained = [s for s in result["sessions"] if isinstance(s, dict) and s.get("trained")] or result[
        "sessions"
    ][-1:]
    loads = "; ".join(
        f"{s.get('started', '?')} → {s.get('ended', '?')}, load {_fmt(s.get('load_start'))} → {_fmt(s.get('load_end'))}"
        for s in trained[-3:]
        if isinstance(s, dict)
    )
    return (
        f"Report {result['written']} · {m.get('cores')} cores ({m.get('usable_cores')} usable) · CPU {m.get('cpu')}, "
        f"flags {flags} (of {', '.join(m.get('cpu_flags', {}))}) · training sessions (1-min load at start → end): "
        f"{loads or 'none'}"
    )


def _options_lines(settings: Settings) -> list[str]:
    """The options the runs were given beyond --env, --traj-encoder and --steps (none: no line), so that a table
    of memories at other sizes says so."""
    given = [f"-c {path.name}" for path in settings.configs] + [f"-o {item}" for item in settings.overrides]
    lines = [f"Every memory's runs: {' '.join(given)}."] if given else []
    for memory in settings.memories:
        own = [item for name, item in settings.memory_options if name == memory]
        if own:
            lines.append(f"{memory}'s runs also: {' '.join(f'-o {item}' for item in own)}.")
    return ["", *lines] if lines else []


def markdown(result: Mapping[str, Any], settings: Settings) -> str:
    """``bench.md``: the header, the main table (one row per memory), raw scores per task, and what is missing."""
    tasks, baseline = result["tasks"], result["baseline"]
    sources = {scale["best_source"] for scale in tasks.values()}
    if sources == {"bench"}:
        best_text = "best = best in this bench (no best known return: give --best TASK=RETURN)"
    elif len(sources) == 1:
        best_text = f"best = {BEST_SOURCES[sources.pop()]}"
    else:
        best_text = "best = " + "; ".join(
            f"{BEST_SOURCES[source]} for {', '.join(t for t, scale in tasks.items() if scale['best_source'] == source)}"
            for source in BEST_SOURCES
            if source in sources
        )
    lines = [
        f"# Memory bench: {', '.join(settings.memories)} on {', '.join(settings.tasks)}",
        "",
        _header(result),
        "",
        f"{len(settings.seeds)} seed(s) x {settings.steps:,} env steps per run. Score: val return, mean of a run's "
        f"last {result['score']['last']} evaluations after its first gradient update. Per task: (score - floor) / "
        f"(best - floor), floor = a random policy's mean return, {best_text}; a task column shows mean ± sd over "
        "seeds (raw returns where a task cannot be normalised: see below). IQM over runs x tasks and P(a run beats "
        f"one of {baseline}) by rliable, 95 % stratified-bootstrap intervals ({result['reps']:,} replications), on "
        f"the tasks {', '.join(result['tasks_in_statistics']) or '(none)'}. Speed, median over runs: updates and "
        "env steps per second of training wall time (a run does not time collection and learning apart), policy "
        "steps/s = validation's env steps per second (acting alone); peak RSS = the child's largest process "
        "(wait4's ru_maxrss).",
        *_options_lines(settings),
        "",
        f"| memory | {' | '.join(settings.tasks)} | IQM [95 % CI] | P(> {baseline}) [95 % CI] | updates/s | env steps/s | "
        "policy steps/s | peak RSS GiB | runs |",
        "|---" * (len(settings.tasks) + 8) + "|",
    ]
    for memory, row in result["memories"].items():
        cells = []
        for task in settings.tasks:
            cell = row["per_task"][task]
            text = f"{_fmt(cell['mean'])} ± {_fmt(cell['sd'], 2)}" if cell["n"] > 1 else _fmt(cell["mean"])
            cells.append(text if cell["normalised"] else f"{text} (raw)")
        aggregates = row["aggregates"] or {}
        better = (
            "baseline" if memory == baseline else _interval(row["probability_of_improvement"], "probability")
        )
        rss = row["peak_rss_bytes"] / GIB if isinstance(row["peak_rss_bytes"], int | float) else None
        lines.append(
            f"| {memory} | {' | '.join(cells)} | {_interval(aggregates.get('IQM'))} | {better} | "
            f"{_fmt(row['updates_per_second'])} | {_fmt(row['env_steps_per_second'])} | "
            f"{_fmt(row['policy_steps_per_second'])} | {_fmt(rss, 2)} | {row['runs_scored']}/{row['runs_planned']} |"
        )
    lines += ["", "## Raw scores", "", f"| task | floor (random) | best | {' | '.join(settings.memories)} |"]
    lines.append("|---" * (len(settings.memories) + 3) + "|")
    for task, scale in tasks.items():
        floor = scale["floor"] or {}
        raw = [result["memories"][m]["per_task"][task]["raw"] for m in settings.memories]
        cells = [", ".join(_fmt(v) for v in values) or "—" for values in raw]
        floor_text = (
            f"{_fmt(floor.get('mean_return'))} ({floor.get('episodes', 0)} episodes)" if floor else "—"
        )
        lines.append(
            f"| {task} | {floor_text} | {_fmt(scale['best'])} ({scale['best_source']}) | {' | '.join(cells)} |"
        )
    notes = [
        f"- {task}: left out of the normalised statistics: {s['note']}"
        if s["note"]
        else f"- {task}: {s['remark']}"
        for task, s in tasks.items()
        if s["note"] or s.get("remark")
    ]
    if not result["memories"][baseline]["rows"]:
        notes.append(
            f"- no P(> {baseline}): no seed of the baseline has a score on every task of the statistics"
        )
    if notes:
        lines += ["", *notes]
    if result["missing"]:
        lines += ["", "## Missing", "", *(f"- {line}" for line in result["missing"])]
    return "\n".join(lines) + "\n"


def draw(result: Mapping[str, Any], settings: Settings, path: Path, *, root: Path) -> None:
    """``bench.png``: each memory's IQM with its interval, and its normalised score per task (mean over seeds,
    each seed a dot)."""
    from amago_core.optional import require
    from amago_tools.plotting import PLOT_EXTRA_OF, PLOTTING

    matplotlib = require("matplotlib", "plot", PLOTTING, PLOT_EXTRA_OF)
    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", "plot", PLOTTING, PLOT_EXTRA_OF)
    memories = list(settings.memories)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.5 * len(memories) + 3.5))
    for i, memory in enumerate(memories):
        iqm = (result["memories"][memory]["aggregates"] or {}).get("IQM")
        if iqm:
            left.errorbar(
                iqm["estimate"],
                i,
                xerr=[[iqm["estimate"] - iqm["low"]], [iqm["high"] - iqm["estimate"]]],
                fmt="o",
                capsize=4,
                color=f"C{i}",  # one colour per memory in both panels, whatever has an IQM
            )
    left.set_yticks(range(len(memories)), memories)
    left.set_ylim(len(memories) - 0.5, -0.5)  # the first memory (the table's first row) on top
    left.set_xlabel("normalised score, IQM (95 % CI)")
    left.set_title("IQM across tasks and seeds", fontsize=9)
    width = 0.8 / max(1, len(memories))
    for i, memory in enumerate(memories):
        offset = (i - (len(memories) - 1) / 2) * width
        cells = [result["memories"][memory]["per_task"][task] for task in settings.tasks]
        shown = [
            (t, cell["mean"])
            for t, cell in enumerate(cells)
            if cell["normalised"] and cell["mean"] is not None
        ]
        right.bar(
            [t + offset for t, _ in shown],
            [mean for _, mean in shown],
            width=width,
            label=memory,
            alpha=0.7,
            color=f"C{i}",
        )
        dots = [
            (settings.tasks.index(run["task"]) + offset, run["normalised"])
            for run in result["runs"]
            if run["memory"] == memory and run["normalised"] is not None
        ]
        right.scatter([x for x, _ in dots], [y for _, y in dots], s=10, color="black", zorder=3)
    right.set_xticks(range(len(settings.tasks)), settings.tasks, rotation=15, fontsize=8)
    right.set_xlim(-0.5, len(settings.tasks) - 0.5)
    right.set_ylabel("normalised score")
    right.set_title("per task: mean over seeds (bars), each seed (dots)", fontsize=9)
    if result["tasks_in_statistics"]:
        right.legend(fontsize=7)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"), root=root)
    plt.close(fig)


def write_report(out: Path, result: Mapping[str, Any], settings: Settings) -> str:
    """Writes ``bench.md`` and ``bench.png`` into ``out`` through the path gate; returns the Markdown."""
    text = markdown(result, settings)
    atomic_write_text(out / "bench.md", text, root=out)
    draw(result, settings, out / "bench.png", root=out)
    return text


def machine() -> dict[str, Any]:
    """This machine as the report's header says it: cores, load, CPU model and the CPU flags runs record."""
    from amago_core.experiment.hardware import recorded_cpu_flags

    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cores": os.cpu_count(), "usable_cores": usable, "cpu": model, "cpu_flags": recorded_cpu_flags()}


def measure_floor(env: Mapping[str, Any], episodes: int, seed: int = FLOOR_SEED) -> dict[str, Any]:
    """A uniformly random policy's return on ``env`` (a resolved ``env`` table), as ``bench/random_floor.py``
    measures it: ``episodes`` episodes of the suite's val env, actions from ``action_space.sample()``.

    Returns:
        ``mean_return``, ``stdev_return``, ``episodes`` (fewer when :data:`FLOOR_STEP_CAP` steps end first) and
        ``steps``; ``mean_return`` None when no episode ended.
    """
    import numpy as np

    from amago_core.plugins import registries

    made = registries().env_suites.build(dict(env)).make_env("val")
    returns: list[float] = []
    total, steps = 0.0, 0
    try:
        made.action_space.seed(seed)
        made.reset(seed=seed)
        while len(returns) < episodes and steps < FLOOR_STEP_CAP:
            _, reward, terminated, truncated, _ = made.step(np.asarray(made.action_space.sample()))
            total += float(np.asarray(reward).reshape(-1)[0])
            steps += 1
            if bool(np.asarray(terminated).reshape(-1)[0]) or bool(np.asarray(truncated).reshape(-1)[0]):
                returns.append(total)
                total = 0.0
                made.reset()
    finally:
        close = getattr(made, "close", None)
        if callable(close):
            close()
    mean = float(np.mean(returns)) if returns else None
    spread = float(np.std(returns, ddof=1)) if len(returns) > 1 else 0.0
    return {
        "mean_return": mean,
        "stdev_return": spread,
        "episodes": len(returns),
        "steps": steps,
        "seed": seed,
    }


def floors(
    out: Path, groups: Sequence[Group], episodes: int, warn: Callable[[str], None]
) -> dict[str, dict[str, Any]]:
    """Each task's random floor, from ``floors.json`` when measured before for the same env config and episode
    count, else measured now and added there. A task whose env cannot be played here has none (one line)."""
    path = out / FLOORS_FILE
    try:
        cache = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError, RecursionError):
        cache = {}  # a damaged cache is measured again
    cache = cache if isinstance(cache, dict) else {}
    found: dict[str, dict[str, Any]] = {}
    for group in groups:
        if group.task in found or group.config is None:
            continue
        key = json.dumps(
            {"env": group.config["env"], "episodes": episodes, "seed": FLOOR_SEED}, sort_keys=True
        )
        entry: Any = cache.get(key)
        cached = _number(entry.get("mean_return")) if isinstance(entry, dict) else None
        if cached is None or not math.isfinite(cached):
            sys.stderr.write(
                f"amago: bench: measuring the random floor of {group.task} ({episodes} episodes)\n"
            )
            try:
                entry = measure_floor(group.config["env"], episodes)
            except Exception as exc:  # an env that cannot be played here: its scores stay raw
                warn(f"the random floor of {group.task} could not be measured ({type(exc).__name__}: {exc})")
                continue
            cache[key] = entry
            atomic_write_json(path, cache, root=out)
        found[group.task] = entry
    return found
