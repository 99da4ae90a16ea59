"""`amago sweep show`: a study's best trials, its parameter importances, and Optuna's plots as PNG.

The plots are written only inside the sweep folder, through no link (:func:`amago_core.io.atomic_write` with its
root); a trial's folder is named by its number, never read from the study. torch is never imported here;
Optuna and matplotlib load when used.
"""

from __future__ import annotations

import sys
import warnings
from functools import partial
from pathlib import Path
from typing import Any

from amago_core.cli.output import print_json
from amago_core.io import atomic_write, inside
from amago_core.optional import require
from amago_studies.sweep import SweepFolder, optuna_module, score_rule
from amago_studies.sweep_spec import SweepSpec
from amago_tools.plotting import PLOT_EXTRA_OF

PLOTS = (
    ("optimization_history", "plot_optimization_history"),
    ("param_importances", "plot_param_importances"),
    ("parallel_coordinate", "plot_parallel_coordinate"),
    ("slice", "plot_slice"),
    ("intermediate_values", "plot_intermediate_values"),
)
"""The PNG files `amago sweep show` writes (name, Optuna's matplotlib function)."""


def trial_row(trial: Any, folder: SweepFolder) -> dict[str, Any]:
    """One trial as the report lists it (its run folder named by its number: the study's copy is not read)."""
    row: dict[str, Any] = {
        "number": trial.number,
        "state": trial.state.name.lower(),
        "value": trial.value,
        "params": dict(trial.params),
        "run_dir": str(folder.run_dir(trial.number)),
    }
    if trial.intermediate_values:
        row["evaluations"] = len(trial.intermediate_values)
    if "error" in trial.user_attrs:
        row["error"] = trial.user_attrs["error"]
    return row


def best_trials(study: Any, top: int) -> list[Any]:
    """The ``top`` finished trials, best first."""
    optuna = optuna_module()
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    maximize = study.direction == optuna.study.StudyDirection.MAXIMIZE
    return sorted(complete, key=lambda t: t.value, reverse=maximize)[:top]


def importances(study: Any) -> dict[str, float] | None:
    """Optuna's parameter importances (fANOVA), or None when fewer than two trials finished or none varied."""
    optuna = optuna_module()
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if len(complete) < 2:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its ExperimentalWarning says nothing a user can act on
            return {
                key: float(value) for key, value in optuna.importance.get_param_importances(study).items()
            }
    except (RuntimeError, ValueError):  # e.g. every finished trial had the same values
        return None


def study_summary(study: Any, folder: SweepFolder, spec: SweepSpec, top: int) -> dict[str, Any]:
    """The study in numbers: trials per state, what a score is, the best trials, and the importances."""
    counts: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        state = trial.state.name.lower()
        counts[state] = counts.get(state, 0) + 1
    best = best_trials(study, top)
    return {
        "sweep": str(folder.root),
        "study": study.study_name,
        "direction": study.direction.name.lower(),
        "score": score_rule(spec),
        "trials": counts,
        "best": [trial_row(trial, folder) for trial in best],
        "importances": importances(study),
    }


def draw_plots(study: Any, folder: SweepFolder) -> list[Path]:
    """Optuna's matplotlib plots of the study as PNG files in the sweep folder's ``plots/``; a plot the study
    cannot have yet (no finished trial, one parameter) is left out.

    Raises:
        amago_core.io.UnsafePathError: ``plots/`` or a plot's file is a symlink (checked before any is drawn).
    """
    out = folder.plots
    for name, _ in PLOTS:
        inside(folder.root, out / f"{name}.png")
    matplotlib = require("matplotlib", "plot", "amago sweep show", PLOT_EXTRA_OF)
    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", "plot", "amago sweep show", PLOT_EXTRA_OF)
    optuna = optuna_module()
    written = []
    for name, function in PLOTS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                axes = getattr(optuna.visualization.matplotlib, function)(study)
        except (RuntimeError, ValueError, ZeroDivisionError):
            continue  # not drawable for this study yet
        figure = getattr(axes, "figure", None)
        if figure is None:  # some plots return an array of axes
            figure = axes.flat[0].figure
        figure.set_size_inches(9, 5.5)
        figure.tight_layout()
        path = out / f"{name}.png"
        try:
            atomic_write(path, partial(figure.savefig, dpi=110, format="png"), root=folder.root)
        finally:
            plt.close(figure)
        written.append(path)
    return written


def show_study(
    study: Any, folder: SweepFolder, spec: SweepSpec, *, top: int, plots: bool, as_json: bool
) -> None:
    """Prints the study's summary (a table, or JSON) and writes its plots."""
    summary = study_summary(study, folder, spec, top)
    if plots:
        summary["plots"] = [str(path) for path in draw_plots(study, folder)]
    if as_json:
        print_json(summary, exact_floats=True)
        return
    counts = ", ".join(f"{count} {state}" for state, count in sorted(summary["trials"].items()))
    print(f"sweep {summary['study']} ({summary['direction']}): {counts or 'no trials yet'}")
    print(f"score: {summary['score']}")
    if not summary["best"]:
        print("no trial has finished yet")
    for rank, row in enumerate(summary["best"], start=1):
        params = ", ".join(f"{key}={_short(value)}" for key, value in row["params"].items())
        print(f"  {rank}. trial {row['number']}: score {row['value']:.4g}  {params}  ({row['run_dir']})")
    if summary["importances"]:
        print("importances: " + ", ".join(f"{k} {v:.2f}" for k, v in summary["importances"].items()))
    for path in summary.get("plots", []):
        sys.stdout.write(f"wrote {path}\n")


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
