"""Compare groups of runs (``amago compare``): learning curves with bootstrap bands and rliable's final tables.

A *group* is several seeds of one configuration: a folder whose subfolders are run folders (``seed_0/``,
``seed_1/``...), or one run folder (a group of one). Per group this module computes

- the learning curve of one metric: each seed's val curve interpolated onto a common x grid (the range every
  seed covers), the mean over seeds and a 95 % percentile bootstrap band over seeds;
- the final score of each seed (the mean of its last K val evaluations, or its ``test/`` value);
- rliable's IQM, mean, median and (given a target) optimality gap with stratified-bootstrap 95 % intervals,
  and the probability of improvement of each group over each other one;
- the same table per env name for multi-task runs (``val/Average Total Return in <EnvName>``).

Torch-free; numpy only, rliable (``amago-core[compare]``) and matplotlib (``amago-core[plot]``) load when used.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from amago_core.experiment.metrics import AVERAGE_RETURN_KEY
from amago_core.experiment.plot import FRAMES, GRADIENT_STEPS, PLOTTING, _readable_axes
from amago_core.experiment.run_dir import SEED_GROUP_RECORD
from amago_core.io import atomic_write, atomic_write_json, atomic_write_text
from amago_core.optional import require

COMPARING = "amago compare"
"""The feature named when rliable is missing."""
DEFAULT_METRIC = f"val/{AVERAGE_RETURN_KEY}"
PER_ENV_PREFIX = "Average Total Return in "
"""``val/Average Total Return in <EnvName>``: one per env name, what tells a run's env suite."""
X_AXES = {
    "steps": (FRAMES, "env steps"),
    "updates": (GRADIENT_STEPS, "gradient steps"),
    "epochs": ("Epoch", "epochs"),
}
"""``--x`` choices: the record field and the axis label. Records carry no wall-clock time, so no minutes."""
FINAL_CHOICES = ("auto", "val", "test")
AGGREGATES = ("IQM", "Mean", "Median", "Optimality gap")
GRID_POINTS = 100
CURVE_BOOTSTRAP = 2_000
"""Resamples of seeds for a curve's band (numpy; the band is a picture, the table is rliable's)."""
DEFAULT_REPS = 2_000
"""rliable's bootstrap replications: its paper uses 50 000, which takes about 30 s per group here."""
CONFIDENCE = 0.95


class CompareError(ValueError):
    """Nothing valid to compare; the message says what to pass instead."""


@dataclass
class Run:
    """One seed's val and test records (only their numbers), in the order of its metrics.jsonl."""

    path: Path
    val: list[dict[str, float]] = field(default_factory=list)
    test: list[dict[str, float]] = field(default_factory=list)

    def env_names(self) -> tuple[str, ...]:
        """The env names of its per-env val returns (its env suite), sorted."""
        names = {
            key.removeprefix(f"val/{PER_ENV_PREFIX}")
            for record in self.val
            for key in record
            if key.startswith(f"val/{PER_ENV_PREFIX}")
        }
        return tuple(sorted(names))

    def values(self, key: str) -> list[float]:
        records = self.test if key.startswith("test/") else self.val
        return [record[key] for record in records if key in record]


@dataclass
class Group:
    """Several seeds of one configuration."""

    label: str
    path: Path
    runs: list[Run]


def _finite(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def read_run(path: Path) -> Run:
    """The val and test records of ``path/metrics.jsonl``, streamed.

    Only lines holding a val or test key are parsed (the many train and dataset records are not), and of
    them only finite numbers are kept: a long run's file costs seconds and little memory.
    """
    run = Run(Path(path))
    with (run.path / "metrics.jsonl").open("rb") as handle:
        for line in handle:
            kind = "val" if b'"val/' in line else "test" if b'"test/' in line else None
            if kind is None:
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue  # a line cut short by a crash
            if not isinstance(record, dict):
                continue
            numbers = {key: number for key, value in record.items() if (number := _finite(value)) is not None}
            (run.val if kind == "val" else run.test).append(numbers)
    return run


def _natural(name: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def load_group(folder: Path, label: str, warn: Callable[[str], None]) -> Group | None:
    """The runs of a group folder (or a run folder, a group of one); None when it holds none.

    A seed folder without metrics.jsonl, or whose env suite differs from the group's first seed, is left out
    with one line to ``warn``.
    """
    folder = Path(folder)
    if (folder / "metrics.jsonl").is_file():
        paths = [folder]
    elif folder.is_dir():
        # A folder `amago run --seeds` made holds its logs beside the seeds: only seed_<k>/ are runs there.
        pattern = "seed_*" if (folder / SEED_GROUP_RECORD).is_file() else "*"
        paths = sorted((p for p in folder.glob(pattern) if p.is_dir()), key=lambda p: _natural(p.name))
    else:
        warn(f"{folder}: no such folder; pass run folders or folders of seeds (seed_*/metrics.jsonl)")
        return None
    runs: list[Run] = []
    for path in paths:
        if not (path / "metrics.jsonl").is_file():
            warn(f"{path}: no metrics.jsonl, left out of {label!r}")
            continue
        run = read_run(path)
        if runs and run.env_names() != runs[0].env_names():
            warn(f"{path}: evaluated on other envs than {runs[0].path.name}, left out of {label!r}")
            continue
        runs.append(run)
    if not runs:
        warn(f"{folder}: no run folder with a metrics.jsonl in it, {label!r} left out")
        return None
    return Group(label, folder, runs)


def final_key(metric: str, final: str, groups: Iterable[Group]) -> str:
    """The key final scores are read from: ``metric`` itself (val), or its ``test/`` twin.

    ``auto`` takes the test value when every run has one (a run evaluated once at its end on the test
    envs), else the val one, so all groups are scored the same way.
    """
    test_key = "test/" + metric.removeprefix("val/")
    if final == "val" or not metric.startswith("val/"):
        return metric
    if final == "test":
        return test_key
    every_run = [run for group in groups for run in group.runs]
    return test_key if every_run and all(run.values(test_key) for run in every_run) else metric


def final_score(run: Run, key: str, last: int) -> float | None:
    """The mean of the last ``last`` values of ``key`` (a test key: its last value); None when it has none."""
    values = run.values(key)
    if not values:
        return None
    return float(np.mean(values[-1:] if key.startswith("test/") else values[-max(1, last) :]))


def curve(run: Run, metric: str, x_field: str) -> tuple[np.ndarray, np.ndarray]:
    """``metric``'s val points against ``x_field``, sorted by x (a point without that field is skipped)."""
    points = sorted((r[x_field], r[metric]) for r in run.val if metric in r and x_field in r)
    xs = np.array([x for x, _ in points], dtype=float)
    ys = np.array([y for _, y in points], dtype=float)
    return xs, ys


def group_curve(
    curves: list[tuple[np.ndarray, np.ndarray]], seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Seeds' curves on a common grid: (x, mean, band low, band high); None when no seed has a point.

    The grid spans the x range every seed covers, so no seed's curve is extended past its last evaluation
    (a seed that stopped early would otherwise hold its last value flat). The band is the 2.5 and 97.5
    percentiles of the mean over seeds resampled with replacement.
    """
    curves = [(xs, ys) for xs, ys in curves if len(xs)]
    if not curves:
        return None
    start = max(float(xs[0]) for xs, _ in curves)
    stop = min(float(xs[-1]) for xs, _ in curves)
    grid = np.linspace(start, stop, GRID_POINTS) if stop > start else np.array([stop])
    matrix = np.stack([np.interp(grid, xs, ys) for xs, ys in curves])  # seeds x grid
    mean = matrix.mean(axis=0)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(curves), size=(CURVE_BOOTSTRAP, len(curves)))
    means = matrix[picks].mean(axis=1)  # resamples x grid
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail], axis=0)
    return grid, mean, low, high


def _aggregates(target: float | None) -> dict[str, Callable[[np.ndarray], float]]:
    metrics = require("rliable.metrics", "compare", COMPARING)
    funcs: dict[str, Callable[[np.ndarray], float]] = {
        "IQM": metrics.aggregate_iqm,
        "Mean": metrics.aggregate_mean,
        "Median": metrics.aggregate_median,
    }
    if target is not None:
        funcs["Optimality gap"] = lambda scores: metrics.aggregate_optimality_gap(scores, target)
    return funcs


def interval_table(
    scores: dict[str, np.ndarray], target: float | None, reps: int, seed: int
) -> dict[str, dict[str, dict[str, float]]]:
    """rliable's point estimates and stratified-bootstrap 95 % intervals, per group and aggregate.

    Args:
        scores: per group label, a (seeds x tasks) matrix of final scores.
        target: the score that counts as solved, for the optimality gap; None leaves the gap out (rliable's
            default of 1 assumes normalised scores, which raw returns are not).
        reps: bootstrap replications.
        seed: each group's bootstrap starts from numpy's global random state seeded with ``seed``, so a
            group's interval does not depend on which other groups are compared with it.

    Returns:
        ``{label: {aggregate: {"estimate", "low", "high"}}}``.
    """
    library = require("rliable.library", "compare", COMPARING)
    funcs = _aggregates(target)

    def all_aggregates(matrix: np.ndarray) -> np.ndarray:
        return np.array([func(matrix) for func in funcs.values()])

    table: dict[str, dict[str, dict[str, float]]] = {}
    for label, matrix in scores.items():
        # rliable 1.2's StratifiedBootstrap draws its indices from numpy's global generator (its random_state
        # argument is not used for them): seed that one, and give the caller's state back afterwards.
        saved = np.random.get_state()
        np.random.seed(seed)
        try:
            points, intervals = library.get_interval_estimates({label: matrix}, all_aggregates, reps=reps)
        finally:
            np.random.set_state(saved)
        table[label] = {
            name: {
                "estimate": float(points[label][i]),
                "low": float(intervals[label][0][i]),
                "high": float(intervals[label][1][i]),
            }
            for i, name in enumerate(funcs)
        }
    return table


def improvement(scores: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """rliable's probability that a run of group X beats one of group Y, for each ordered pair X != Y."""
    metrics = require("rliable.metrics", "compare", COMPARING)
    return [
        {"x": x, "y": y, "probability": float(metrics.probability_of_improvement(scores[x], scores[y]))}
        for x in scores
        for y in scores
        if x != y
    ]


@dataclass
class Comparison:
    """What ``amago compare`` writes: :meth:`as_json` is ``compare.json``."""

    metric: str
    score_key: str
    x: str
    last: int
    target: float | None
    reps: int
    seed: int
    groups: list[Group]
    scores: dict[str, list[float]]
    table: dict[str, dict[str, dict[str, float]]]
    improvement: list[dict[str, Any]]
    per_env: dict[str, dict[str, dict[str, dict[str, float]]]]
    curves: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    skipped: list[str]

    def as_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "score_key": self.score_key,
            "last": self.last,
            "x": self.x,
            "target": self.target,
            "reps": self.reps,
            "seed": self.seed,
            "confidence": CONFIDENCE,
            "groups": [
                {
                    "label": group.label,
                    "path": str(group.path),
                    "runs": [str(run.path) for run in group.runs],
                    "scores": self.scores[group.label],
                }
                for group in self.groups
            ],
            "table": self.table,
            "probability_of_improvement": self.improvement,
            "per_env": self.per_env,
            "skipped": self.skipped,
        }


def compare(
    folders: list[Path],
    *,
    labels: list[str] | None = None,
    metric: str = DEFAULT_METRIC,
    x: str = "steps",
    final: str = "auto",
    last: int = 1,
    target: float | None = None,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    warn: Callable[[str], None] = lambda line: None,
) -> Comparison:
    """Reads the groups and computes every table and curve of ``amago compare``.

    Groups are compared on the env suite of the first valid one: a group evaluated on other envs is left out
    with one line to ``warn``, as is a seed without metrics or without the metric.

    Raises:
        CompareError: no group has a run with ``metric`` (the message says what to check).
        amago_core.optional.MissingOptionalDependencyError: rliable is not installed.
    """
    require("rliable.library", "compare", COMPARING)  # before any reading: say so at once
    skipped: list[str] = []

    def note(line: str) -> None:
        skipped.append(line)
        warn(line)

    if x not in X_AXES:
        msg = f"--x {x!r} is not one of {', '.join(X_AXES)}"
        raise CompareError(msg)
    if final not in FINAL_CHOICES:
        msg = f"--final {final!r} is not one of {', '.join(FINAL_CHOICES)}"
        raise CompareError(msg)
    names = labels or [Path(folder).resolve().name for folder in folders]
    if len(names) != len(folders):
        msg = f"{len(names)} --label for {len(folders)} folders: give one label per folder, in their order"
        raise CompareError(msg)
    if len(set(names)) != len(names):
        msg = f"two groups are labelled the same ({', '.join(names)}): tell them apart with --label"
        raise CompareError(msg)

    groups: list[Group] = []
    for folder, label in zip(folders, names, strict=True):
        group = load_group(Path(folder), label, note)
        if group is None:
            continue
        with_metric = [run for run in group.runs if run.values(metric)]
        for run in group.runs:
            if not run.values(metric):
                note(f"{run.path}: no {metric!r} values, left out of {label!r} (see --metric)")
        if not with_metric:
            continue
        group.runs = with_metric
        if groups and group.runs[0].env_names() != groups[0].runs[0].env_names():
            note(
                f"{group.path}: evaluated on other envs than {groups[0].label!r}, left out "
                "(compare groups of the same env suite)"
            )
            continue
        groups.append(group)
    if not groups:
        msg = f"nothing to compare: no run folder with {metric!r} in its metrics.jsonl (see --metric)"
        raise CompareError(msg)

    key = final_key(metric, final, groups)
    scores: dict[str, list[float]] = {}
    for group in groups:
        kept = []
        for run in group.runs:
            score = final_score(run, key, last)
            if score is None:
                note(f"{run.path}: no {key!r} values, its final score is left out (see --final)")
                continue
            kept.append(score)
        scores[group.label] = kept
    scored = {label: np.array(values)[:, None] for label, values in scores.items() if values}
    if not scored:
        msg = f"nothing to compare: no run has a final {key!r} (try --final val)"
        raise CompareError(msg)

    envs = groups[0].runs[0].env_names()
    per_env: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    if len(envs) > 1:
        for env in envs:
            env_key = key.split("/", 1)[0] + f"/{PER_ENV_PREFIX}{env}"
            env_scores = {
                group.label: np.array(values)[:, None]
                for group in groups
                if (values := [s for run in group.runs if (s := final_score(run, env_key, last)) is not None])
            }
            if env_scores:
                per_env[env] = interval_table(env_scores, target, reps, seed)

    x_field = X_AXES[x][0]
    curves = {
        group.label: band
        for group in groups
        if (band := group_curve([curve(run, metric, x_field) for run in group.runs], seed)) is not None
    }
    return Comparison(
        metric=metric,
        score_key=key,
        x=x,
        last=last,
        target=target,
        reps=reps,
        seed=seed,
        groups=groups,
        scores=scores,
        table=interval_table(scored, target, reps, seed),
        improvement=improvement(scored),
        per_env=per_env,
        curves=curves,
        skipped=skipped,
    )


def _number(value: float) -> str:
    return f"{value:.4g}"


def _markdown_table(table: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    names = [name for name in AGGREGATES if any(name in row for row in table.values())]
    lines = ["| group | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label, row in table.items():
        cells = [
            f"{_number(row[n]['estimate'])} [{_number(row[n]['low'])}, {_number(row[n]['high'])}]"
            for n in names
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def markdown(result: Comparison) -> str:
    """``compare.md``: the final table, the probabilities of improvement and one table per env name."""
    if result.score_key.startswith("test/"):
        source = "the last value"
    else:
        source = "the last value" if result.last == 1 else f"the mean of the last {result.last} values"
    lines = [
        f"# {result.metric}",
        "",
        f"Final score per seed: {source} of `{result.score_key}`. "
        f"Point estimate [95 % stratified-bootstrap interval] by rliable ({result.reps} replications).",
        "",
        *_markdown_table(result.table),
        "",
    ]
    if result.target is None:
        lines += ["Optimality gap: left out (give `--target`, the score that counts as solved).", ""]
    if result.improvement:
        lines += ["## Probability of improvement", "", "| X | Y | P(X > Y) |", "|---|---|---|"]
        lines += [f"| {p['x']} | {p['y']} | {_number(p['probability'])} |" for p in result.improvement]
        lines.append("")
    for env, table in result.per_env.items():
        lines += [f"## {env}", "", *_markdown_table(table), ""]
    if result.skipped:
        lines += ["## Left out", "", *(f"- {line}" for line in result.skipped), ""]
    return "\n".join(lines)


def draw(result: Comparison, path: Path) -> None:
    """``compare.png``: each group's mean curve over seeds with its 95 % bootstrap band."""
    matplotlib = require("matplotlib", "plot", PLOTTING)
    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", "plot", PLOTTING)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for group in result.groups:
        if group.label not in result.curves:
            continue
        xs, mean, low, high = result.curves[group.label]
        (line,) = ax.plot(
            xs, mean, label=f"{group.label} ({len(group.runs)} seeds)", marker="o" if len(xs) == 1 else None
        )
        ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.2, lw=0)
    _readable_axes(ax)
    ax.set_xlabel(X_AXES[result.x][1])
    ax.set_ylabel(result.metric.split("/", 1)[-1], fontsize=8)
    ax.set_title("mean over seeds, 95 % bootstrap band", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)


def write_outputs(result: Comparison, out: Path) -> list[Path]:
    """Writes ``compare.png``, ``compare.md`` and ``compare.json`` into ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    png, md, js = out / "compare.png", out / "compare.md", out / "compare.json"
    draw(result, png)
    atomic_write_text(md, markdown(result))
    atomic_write_json(js, result.as_json())
    return [png, md, js]
