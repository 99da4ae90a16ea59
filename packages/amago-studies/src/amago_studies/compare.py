"""Compare groups of runs (``amago compare``): learning curves with bootstrap bands and rliable's final tables.

A *group* is several seeds of one configuration: a folder whose subfolders are run folders (``seed_0/``,
``seed_1/``...), or one run folder (a group of one). Per group this module computes

- the learning curve of one metric against env steps, updates, epochs or training minutes: each seed's val
  curve interpolated onto a common x grid (the range every seed covers), the mean over seeds and a 95 %
  percentile bootstrap band over seeds;
- the final score of each seed (the mean of its last K val evaluations, or its ``test/`` value);
- rliable's IQM, mean, median and (given a target) optimality gap with stratified-bootstrap 95 % intervals,
  and the probability of improvement of each group over each other one, with its interval too;
- for multi-task runs (``val/Average Total Return in <EnvName>``): the same table with the env names as
  rliable's tasks (a seeds x envs score matrix), and one table per env name;
- for meta-RL suites that log a metric per attempt of a trial (``Episode <k> Success`` of Meta-Frozen-Lake
  and BabyAI, ``Trial <k> Success`` of Meta-World, ``Ep <k> Return`` of XLand): the final mean per attempt.

Torch-free; numpy only, rliable (``amago-studies[compare]``) and matplotlib (``amago-tools[plot]``) load when used.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from amago_core.config.task_split import task_split_of
from amago_core.experiment.metrics import AVERAGE_RETURN_KEY, WALL_TIME_KEY
from amago_core.io import atomic_write, atomic_write_json, atomic_write_text, inside
from amago_core.optional import require
from amago_studies import SEED_GROUP_RECORD, STUDIES, SWEEP_RECORD
from amago_tools.plotting import FRAMES, GRADIENT_STEPS, PLOT_EXTRA_OF, PLOTTING, readable_axes

COMPARING = "amago compare"
"""The feature named when rliable is missing."""
DEFAULT_METRIC = f"val/{AVERAGE_RETURN_KEY}"
PER_ENV_PREFIX = "Average Total Return in "
"""``val/Average Total Return in <EnvName>``: one per env name, what tells a run's env suite."""
X_AXES = {
    "steps": (FRAMES, "env steps", 1.0),
    "updates": (GRADIENT_STEPS, "gradient steps", 1.0),
    "epochs": ("Epoch", "epochs", 1.0),
    "minutes": (WALL_TIME_KEY, "training wall time (minutes)", 1 / 60),
}
"""``--x`` choices: the record field, the axis label and the factor from the field's unit to the axis's."""
ATTEMPT_KEY = re.compile(
    r"^(?P<section>val|test)/Average (?P<unit>Episode|Trial|Ep) (?P<index>\d+) (?P<quantity>.+?) in (?P<env>.+)$"
)
"""A metric per attempt of a meta-RL trial, as ``policy_metrics`` names an env's logged metric: Meta-Frozen-Lake
and BabyAI log ``Episode <k> Success`` (k from 0), Meta-World ``Trial <k> Success``, XLand ``Ep <k> Return``
(k from 1). The attempt index is shown as logged."""
FINAL_CHOICES = ("auto", "val", "test")
AGGREGATES = ("IQM", "Mean", "Median", "Optimality gap")
GRID_POINTS = 100
CURVE_BOOTSTRAP = 2_000
"""Resamples of seeds for a curve's band (numpy; the band is a picture, the table is rliable's)."""
DEFAULT_REPS = 2_000
"""rliable's bootstrap replications: its paper uses 50 000, which takes about 30 s per group here."""
REPS_MIN = 100
"""Fewer replications than this give intervals that change from one ``--seed`` to the next."""
REPS_MAX = 100_000
"""The most bootstrap replications ``--reps`` takes: twice the rliable paper's 50 000, about a minute per group
here and more for each pair of groups (probability of improvement); more would add minutes to hours and
gigabytes of resamples for digits that no longer change. A larger value is refused in one line."""
OUT_FOLDER = "compare"
"""The folder ``amago compare`` writes into, without ``--out``: next to the compared folders (see
:func:`default_out`)."""
OUTPUT_FILE = "compare.json"
"""What marks a folder as ``amago compare``'s output (so that a later comparison of its parent skips it)."""
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

    def attempt_keys(self, section: str) -> dict[str, dict[int, list[str]]]:
        """Its per-attempt metrics in ``section`` (val or test): series name (``Episode k Success``) -> attempt
        index -> the keys of that attempt, one per env name."""
        keys = {key for record in (self.test if section == "test" else self.val) for key in record}
        series: dict[str, dict[int, list[str]]] = {}
        for key in sorted(keys):
            match = ATTEMPT_KEY.match(key)
            if match is None or match["section"] != section:
                continue
            name = f"{match['unit']} k {match['quantity']}"
            series.setdefault(name, {}).setdefault(int(match["index"]), []).append(key)
        return series


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
    if (folder / SWEEP_RECORD).is_file():
        # Its trials are different configurations, not seeds of one: averaging them would mean nothing.
        warn(
            f"{folder}: a sweep folder, left out; compare its trials ({folder}/trial_3 {folder}/trial_7 ...) "
            f"or see them ranked with `amago sweep show {folder}`"
        )
        return None
    if (folder / "metrics.jsonl").is_file():
        paths = [folder]
    elif folder.is_dir():
        # A folder `amago run --seeds` made holds its logs beside the seeds: only seed_<k>/ are runs there.
        # A folder of runs may also hold an earlier comparison's output (compare/): no run either.
        pattern = "seed_*" if (folder / SEED_GROUP_RECORD).is_file() else "*"
        paths = sorted(
            (p for p in folder.glob(pattern) if p.is_dir() and not (p / OUTPUT_FILE).is_file()),
            key=lambda p: _natural(p.name),
        )
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


def curve(run: Run, metric: str, x_field: str, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``metric``'s val points against ``x_field`` times ``scale``, sorted by x (a point without the field is
    skipped)."""
    points = sorted((r[x_field] * scale, r[metric]) for r in run.val if metric in r and x_field in r)
    xs = np.array([x for x, _ in points], dtype=float)
    ys = np.array([y for _, y in points], dtype=float)
    return xs, ys


def bootstrap_band(matrix: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mean over the rows (seeds) of a (seeds x points) matrix and its 95 % percentile bootstrap band.

    The band is the 2.5 and 97.5 percentiles of the mean over seeds resampled with replacement.
    """
    mean = matrix.mean(axis=0)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(matrix), size=(CURVE_BOOTSTRAP, len(matrix)))
    means = matrix[picks].mean(axis=1)  # resamples x points
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail], axis=0)
    return mean, low, high


def group_curve(
    curves: list[tuple[np.ndarray, np.ndarray]], seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Seeds' curves on a common grid: (x, mean, band low, band high); None when no seed has a point.

    The grid spans the x range every seed covers, so no seed's curve is extended past its last evaluation
    (a seed that stopped early would otherwise hold its last value flat). The band is
    :func:`bootstrap_band`'s.
    """
    curves = [(xs, ys) for xs, ys in curves if len(xs)]
    if not curves:
        return None
    start = max(float(xs[0]) for xs, _ in curves)
    stop = min(float(xs[-1]) for xs, _ in curves)
    grid = np.linspace(start, stop, GRID_POINTS) if stop > start else np.array([stop])
    matrix = np.stack([np.interp(grid, xs, ys) for xs, ys in curves])  # seeds x grid
    mean, low, high = bootstrap_band(matrix, seed)
    return grid, mean, low, high


@contextmanager
def _global_numpy_seed(seed: int) -> Iterator[None]:
    # rliable 1.2's bootstraps draw their indices from numpy's global generator (its random_state argument is
    # not used for them): seed that one, and give the caller's state back afterwards.
    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(saved)


def _aggregates(target: float | None) -> dict[str, Callable[[np.ndarray], float]]:
    metrics = require("rliable.metrics", "compare", COMPARING, STUDIES)
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
    library = require("rliable.library", "compare", COMPARING, STUDIES)
    funcs = _aggregates(target)

    def all_aggregates(matrix: np.ndarray) -> np.ndarray:
        return np.array([func(matrix) for func in funcs.values()])

    table: dict[str, dict[str, dict[str, float]]] = {}
    for label, matrix in scores.items():
        with _global_numpy_seed(seed):
            points, intervals = library.get_interval_estimates({label: matrix}, all_aggregates, reps=reps)
        table[label] = {
            name: {
                "estimate": float(points[label][i]),
                "low": float(intervals[label][0][i]),
                "high": float(intervals[label][1][i]),
            }
            for i, name in enumerate(funcs)
        }
    return table


def improvement(
    scores: dict[str, np.ndarray], reps: int = DEFAULT_REPS, seed: int = 0
) -> list[dict[str, Any]]:
    """rliable's probability that a run of group X beats one of group Y, for each ordered pair X != Y, with its
    stratified-bootstrap 95 % interval.

    For each pair of groups, the one listed first as X, the interval is rliable's ``get_interval_estimates``
    (its independent bootstrap: the seeds of X and of Y resampled separately, within each task), from numpy's
    global state seeded with ``seed``. The reverse pair is derived from the same resamples: rliable's estimate
    is the Mann-Whitney U over ``nx * ny`` with ties counted half, so P(Y > X) = 1 - P(X > Y) in every resample,
    and its interval is one minus the other's, ends swapped. That halves the cost, which is one scipy test per
    task per resample (about a second per pair at 2000 replications).

    Returns:
        ``[{"x", "y", "probability", "low", "high"}]``, every ordered pair, in the order of ``scores``.
    """
    library = require("rliable.library", "compare", COMPARING, STUDIES)
    metrics = require("rliable.metrics", "compare", COMPARING, STUDIES)
    labels = list(scores)
    found: dict[tuple[str, str], tuple[float, float, float]] = {}
    for i, x in enumerate(labels):
        for y in labels[i + 1 :]:
            with _global_numpy_seed(seed):
                points, intervals = library.get_interval_estimates(
                    {"pair": [scores[x], scores[y]]}, metrics.probability_of_improvement, reps=reps
                )
            low, high = (float(end) for end in np.ravel(intervals["pair"]))
            probability = float(points["pair"])
            found[x, y] = (probability, low, high)
            found[y, x] = (1.0 - probability, 1.0 - high, 1.0 - low)
    return [
        {"x": x, "y": y, "probability": p, "low": low, "high": high}
        for x in labels
        for y in labels
        if x != y
        for p, low, high in [found[x, y]]
    ]


def attempt_table(
    groups: list[Group], section: str, last: int, seed: int
) -> dict[str, dict[str, dict[str, Any]]]:
    """The final mean per attempt of each per-attempt series (:data:`ATTEMPT_KEY`) that the runs log.

    A seed's value at attempt k is its final score (:func:`final_score`) of the attempt's metric, averaged over
    the env names that log it; a group's row covers the attempts every one of its seeds logs, with the mean
    over seeds and :func:`bootstrap_band`'s band.

    Returns:
        ``{series: {label: {"attempts", "mean", "low", "high", "seeds"}}}``, series such as
        ``Episode k Success``; empty when no run logs one.
    """
    logged = {id(run): run.attempt_keys(section) for group in groups for run in group.runs}
    names = sorted({name for series in logged.values() for name in series}, key=_natural)
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for name in names:
        rows: dict[str, dict[str, Any]] = {}
        for group in groups:
            finals: list[dict[int, float]] = []
            for run in group.runs:
                by_attempt = logged[id(run)].get(name, {})
                values = {
                    attempt: float(np.mean(scores))
                    for attempt, keys in by_attempt.items()
                    if (scores := [s for key in keys if (s := final_score(run, key, last)) is not None])
                }
                if values:
                    finals.append(values)
            attempts = sorted(set.intersection(*(set(values) for values in finals))) if finals else []
            if not attempts:
                continue
            matrix = np.array([[values[a] for a in attempts] for values in finals])  # seeds x attempts
            mean, low, high = bootstrap_band(matrix, seed)
            rows[group.label] = {
                "attempts": attempts,
                "mean": mean.tolist(),
                "low": low.tolist(),
                "high": high.tolist(),
                "seeds": len(finals),
            }
        if rows:
            table[name] = rows
    return table


TABLES = {
    "table": "one final score per seed (the metric itself): rliable's aggregates over the seeds of each group",
    "envs_as_tasks": "env names as rliable's tasks: a seeds x envs matrix of each seed's final return per env "
    "name; IQM and mean over every (seed, env) score, median of the per-env means; raw returns, so an env with "
    "larger returns weighs more",
    "per_env": "one table per env name: that env's final return per seed",
    "per_attempt": "per-attempt series of meta-RL suites: each seed's final value per attempt, averaged over "
    "env names; mean over seeds with a 95 % percentile bootstrap band (numpy)",
}
"""What each table of ``compare.json`` holds (``compare.json``'s ``tables``, and ``compare.md``'s headings)."""


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
    envs: tuple[str, ...] = ()
    """The env names of a multi-task comparison (empty with one env name)."""
    envs_as_tasks: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    attempts: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    attempt_section: str = "val"
    """Whose records the per-attempt values come from (``val`` or ``test``)."""
    tasks: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per group, per section whose records are compared (``val`` for curves, ``test`` for scores): which tasks
    they were played on (the runs' task split record), so a reader knows training from held-out tasks."""

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
            "tables": TABLES,
            "groups": [
                {
                    "label": group.label,
                    "path": str(group.path),
                    "runs": [str(run.path) for run in group.runs],
                    "scores": self.scores[group.label],
                    "tasks": self.tasks.get(group.label, {}),
                }
                for group in self.groups
            ],
            "table": self.table,
            "probability_of_improvement": self.improvement,
            "envs": list(self.envs),
            "envs_as_tasks": self.envs_as_tasks,
            "per_env": self.per_env,
            "per_attempt": {"section": self.attempt_section, "series": self.attempts},
            "skipped": self.skipped,
        }


def _no_x_line(run: Run, x: str, label: str) -> str:
    x_field = X_AXES[x][0]
    if x == "minutes":
        return (
            f"{run.path}: its records have no {x_field!r} (written before amago logged training wall time), "
            f"left out of {label!r}'s curve; --x steps draws it"
        )
    return f"{run.path}: its val records have no {x_field!r}, left out of {label!r}'s curve (try --x steps)"


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
    with one line to ``warn``, as is a seed without metrics or without the metric, and (from the curves only)
    a seed whose records lack the ``x`` axis (``minutes`` in runs older than the wall-time field).

    Raises:
        CompareError: no group has a run with ``metric`` (the message says what to check).
        amago_core.optional.MissingOptionalDependencyError: rliable is not installed.
    """
    require("rliable.library", "compare", COMPARING, STUDIES)  # before any reading: say so at once
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
    check_reps(reps)
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
            note(f"{group.path}: no seed has {metric!r} values, {label!r} left out (see --metric)")
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
    section = key.split("/", 1)[0]
    scores: dict[str, list[float]] = {}
    for group in groups:
        kept = []
        for run in group.runs:
            score = final_score(run, key, last)
            if score is None:
                note(f"{run.path}: no {key!r} values, its final score is left out (see --final)")
                continue
            kept.append(score)
        if not kept:
            note(
                f"{group.path}: no seed has a final {key!r}, {group.label!r} left out of the tables (see --final)"
            )
        scores[group.label] = kept
    scored = {label: np.array(values)[:, None] for label, values in scores.items() if values}
    if not scored:
        msg = f"nothing to compare: no run has a final {key!r} (try --final val)"
        raise CompareError(msg)

    envs = groups[0].runs[0].env_names()
    per_env: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    envs_as_tasks: dict[str, dict[str, dict[str, float]]] = {}
    if len(envs) > 1:
        env_keys = [f"{section}/{PER_ENV_PREFIX}{env}" for env in envs]
        for env, env_key in zip(envs, env_keys, strict=True):
            env_scores = {
                group.label: np.array(values)[:, None]
                for group in groups
                if (values := [s for run in group.runs if (s := final_score(run, env_key, last)) is not None])
            }
            if env_scores:
                per_env[env] = interval_table(env_scores, target, reps, seed)
        matrices: dict[str, np.ndarray] = {}
        for group in groups:
            rows = []
            for run in group.runs:
                row = [final_score(run, env_key, last) for env_key in env_keys]
                if any(value is None for value in row):
                    note(
                        f"{run.path}: no final {section} return for every env name, left out of envs as tasks"
                    )
                    continue
                rows.append(row)
            if rows:
                matrices[group.label] = np.array(rows, dtype=float)  # seeds x envs
        envs_as_tasks = interval_table(matrices, target, reps, seed)

    attempt_section = section
    attempts = attempt_table(groups, section, last, seed)
    if not attempts and section == "test":
        attempt_section, attempts = "val", attempt_table(groups, "val", last, seed)

    x_field, _, scale = X_AXES[x]
    curves = {}
    for group in groups:
        run_curves = []
        for run in group.runs:
            xs, ys = curve(run, metric, x_field, scale)
            if not len(xs):
                note(_no_x_line(run, x, group.label))
                continue
            run_curves.append((xs, ys))
        band = group_curve(run_curves, seed)
        if band is not None:
            curves[group.label] = band
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
        improvement=improvement(scored, reps, seed),
        per_env=per_env,
        curves=curves,
        skipped=skipped,
        envs=envs if len(envs) > 1 else (),
        envs_as_tasks=envs_as_tasks,
        attempts=attempts,
        attempt_section=attempt_section,
        tasks={
            group.label: {
                part: tasks_of(group, part) for part in dict.fromkeys((_section(metric), _section(key)))
            }
            for group in groups
        },
    )


def check_reps(reps: int) -> None:
    """Refuses a ``--reps`` outside :data:`REPS_MIN` .. :data:`REPS_MAX` in one line.

    Raises:
        CompareError: the value, the bounds and what they mean.
    """
    if not REPS_MIN <= reps <= REPS_MAX:
        msg = (
            f"--reps {reps}: bootstrap replications must be {REPS_MIN:,} to {REPS_MAX:,} (the rliable paper "
            f"uses 50,000; {DEFAULT_REPS:,} by default); more take minutes to hours for digits that no longer change"
        )
        raise CompareError(msg)


def _section(key: str) -> str:
    return key.split("/", 1)[0]


def tasks_of(group: Group, section: str) -> str:
    """Which tasks a group's ``section`` records (``val``, ``test``) were played on, from each run's
    ``task_split.json``: e.g. ``lake seeds 0..199 (the training pool), tasks training draws too``."""
    found = set()
    for run in group.runs:
        record = task_split_of(run.path)
        tasks = record.get("splits", {}).get(section) if record is not None else None
        if not isinstance(tasks, dict):
            found.add("not recorded (a run from before task records, or Python env makers)")
            continue
        description = str(tasks.get("description", "unknown"))
        if tasks.get("held_out"):
            found.add(f"{description}, held out of training")
        elif tasks.get("kind") in ("same", "fresh"):
            found.add(description)  # it says itself that training draws from the same tasks
        else:
            found.add(f"{description}, tasks training draws too")
    return found.pop() if len(found) == 1 else "mixed across seeds: " + "; ".join(sorted(found))


def _number(value: float) -> str:
    return f"{value:.4g}"


def _interval(estimate: float, low: float, high: float) -> str:
    return f"{_number(estimate)} [{_number(low)}, {_number(high)}]"


def _markdown_table(table: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    names = [name for name in AGGREGATES if any(name in row for row in table.values())]
    lines = ["| group | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for label, row in table.items():
        cells = [_interval(row[n]["estimate"], row[n]["low"], row[n]["high"]) for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def _attempt_markdown(rows: dict[str, dict[str, Any]]) -> list[str]:
    attempts = sorted({a for row in rows.values() for a in row["attempts"]})
    lines = ["| group | seeds | " + " | ".join(str(a) for a in attempts) + " |"]
    lines.append("|---" * (len(attempts) + 2) + "|")
    for label, row in rows.items():
        at = {a: i for i, a in enumerate(row["attempts"])}
        cells = [
            _interval(row["mean"][at[a]], row["low"][at[a]], row["high"][at[a]]) if a in at else ""
            for a in attempts
        ]
        lines.append(f"| {label} | {row['seeds']} | " + " | ".join(cells) + " |")
    return lines


def markdown(result: Comparison) -> str:
    """``compare.md``: the main table first (what ``amago compare`` prints), then the probabilities of
    improvement, the envs-as-tasks table, one table per env name and the per-attempt tables, each headed by
    what it holds."""
    if result.score_key.startswith("test/"):
        source = "the last value"
    else:
        source = "the last value" if result.last == 1 else f"the mean of the last {result.last} values"
    lines = [
        f"# {result.metric}",
        "",
        f"Main table, one final score per seed: {source} of `{result.score_key}`. "
        f"Point estimate [95 % stratified-bootstrap interval] by rliable ({result.reps} replications).",
        "",
        *_markdown_table(result.table),
        "",
    ]
    if result.target is None:
        lines += ["Optimality gap: left out (give `--target`, the score that counts as solved).", ""]
    if result.tasks:
        lines += ["Tasks each group's records were played on:", ""]
        for label, parts in result.tasks.items():
            lines += [f"- {label}: " + "; ".join(f"`{part}/` on {text}" for part, text in parts.items())]
        lines += [""]
    if result.improvement:
        lines += [
            "## Probability of improvement",
            "",
            "P(a seed of X scores higher than a seed of Y), on the main table's scores, by rliable "
            "[95 % stratified-bootstrap interval].",
            "",
            "| X | Y | P(X > Y) |",
            "|---|---|---|",
        ]
        lines += [
            f"| {p['x']} | {p['y']} | {_interval(p['probability'], p['low'], p['high'])} |"
            for p in result.improvement
        ]
        lines.append("")
    section = result.score_key.split("/", 1)[0]
    if result.envs_as_tasks:
        lines += [
            f"## Envs as tasks ({len(result.envs)} env names)",
            "",
            f"The env names as rliable's tasks: a seeds x envs matrix of each seed's final "
            f"`{section}/{PER_ENV_PREFIX}<env>`. IQM and mean over every (seed, env) score, median of the "
            "per-env means. Raw returns: an env with larger returns weighs more.",
            "",
            *_markdown_table(result.envs_as_tasks),
            "",
        ]
    for env, table in result.per_env.items():
        lines += [f"## Env: {env}", "", f"Final `{section}/{PER_ENV_PREFIX}{env}` per seed.", ""]
        lines += [*_markdown_table(table), ""]
    for name, rows in result.attempts.items():
        lines += [
            f"## Per attempt: {name}",
            "",
            f"Each seed's final `{result.attempt_section}/Average {name.replace(' k ', ' <k> ')} in <env>` "
            "(averaged over env names) per attempt k, as logged; mean over seeds "
            "[95 % percentile bootstrap band over seeds].",
            "",
            *_attempt_markdown(rows),
            "",
        ]
    if result.skipped:
        lines += ["## Left out", "", *(f"- {line}" for line in result.skipped), ""]
    return "\n".join(lines)


def _pyplot() -> Any:
    matplotlib = require("matplotlib", "plot", PLOTTING, PLOT_EXTRA_OF)
    matplotlib.use("Agg")
    return require("matplotlib.pyplot", "plot", PLOTTING, PLOT_EXTRA_OF)


def draw(result: Comparison, path: Path, *, root: Path | None = None) -> None:
    """``compare.png``: each group's mean curve over seeds with its 95 % bootstrap band (``root``: as in
    :func:`amago_core.io.atomic_write`)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for group in result.groups:
        if group.label not in result.curves:
            continue
        xs, mean, low, high = result.curves[group.label]
        (line,) = ax.plot(
            xs, mean, label=f"{group.label} ({len(group.runs)} seeds)", marker="o" if len(xs) == 1 else None
        )
        ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.2, lw=0)
    if not result.curves:
        ax.text(
            0.5,
            0.5,
            f"no run has {X_AXES[result.x][0]!r}: see compare.md",
            ha="center",
            transform=ax.transAxes,
        )
    readable_axes(ax)
    ax.set_xlabel(X_AXES[result.x][1])
    ax.set_ylabel(result.metric.split("/", 1)[-1], fontsize=8)
    ax.set_title("mean over seeds, 95 % bootstrap band", fontsize=9)
    if result.curves:
        ax.legend(fontsize=7)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"), root=root)
    plt.close(fig)


def draw_attempts(result: Comparison, path: Path, *, root: Path | None = None) -> None:
    """``compare_attempts.png``: per per-attempt series, each group's final mean per attempt with its band
    (``root``: as in :func:`amago_core.io.atomic_write`)."""
    plt = _pyplot()
    series = list(result.attempts.items())
    fig, axes = plt.subplots(1, len(series), figsize=(6 * len(series), 4.2), squeeze=False)
    for ax, (name, rows) in zip(axes[0], series, strict=True):
        for label, row in rows.items():
            (line,) = ax.plot(
                row["attempts"], row["mean"], marker="o", label=f"{label} ({row['seeds']} seeds)"
            )
            ax.fill_between(row["attempts"], row["low"], row["high"], color=line.get_color(), alpha=0.2, lw=0)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel("attempt (as logged)")
        ax.set_ylabel(name, fontsize=8)
        ax.set_title(f"final {name}, mean over seeds, 95 % bootstrap band", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"), root=root)
    plt.close(fig)


def default_out(folders: Iterable[str | Path]) -> Path:
    """Where ``amago compare`` writes without ``--out``: ``compare/`` in the folder that holds the compared
    folders (their common parent, by name: ``runs/compare/`` for ``runs/a runs/b``), never the shell's current
    folder."""
    parents = [os.path.dirname(os.path.abspath(folder)) for folder in folders]
    return Path(os.path.commonpath(parents)) / OUT_FOLDER


def write_outputs(result: Comparison, out: Path, *, root: Path | None = None) -> list[Path]:
    """Writes ``compare.png``, ``compare.md``, ``compare.json`` and, when the runs log per-attempt metrics,
    ``compare_attempts.png`` into ``out``; returns their paths.

    Every file goes through the path gate (:func:`amago_core.io.inside`): none is written or removed through a
    symlink, or outside ``root``. All four are checked before anything is written.

    Args:
        result: the comparison.
        out: the folder of the outputs.
        root: the folder they must stay in: the folder ``out`` is in when amago chose it (:func:`default_out`,
            so that a linked ``compare/`` is refused); None: ``out`` itself (a folder the user named may be a
            link, the files in it may not).

    Raises:
        amago_core.io.UnsafePathError: an output (or ``compare/``) is a symlink; nothing is written.
    """
    out = Path(out)
    root = out if root is None else Path(root)
    png, md, js = out / "compare.png", out / "compare.md", out / OUTPUT_FILE
    attempts_png = out / "compare_attempts.png"
    for path in (png, attempts_png, md, js):
        inside(root, path)
    out.mkdir(parents=True, exist_ok=True)
    draw(result, png, root=root)
    written = [png]
    if result.attempts:
        draw_attempts(result, attempts_png, root=root)
        written.append(attempts_png)
    else:
        attempts_png.unlink(missing_ok=True)  # an earlier comparison's, which these groups would seem to have
    atomic_write_text(md, markdown(result), root=root)
    atomic_write_json(js, result.as_json(), root=root)
    return [*written, md, js]
