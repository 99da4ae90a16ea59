"""Learning curves from a run's local ``metrics.jsonl`` (no wandb needed; matplotlib from ``amago-core[plot]``)."""

from __future__ import annotations

import json
import math
import re
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amago_core.experiment.metrics import AVERAGE_RETURN_KEY
from amago_core.optional import MissingOptionalDependencyError, require

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PLOTTING = "drawing learning curves (amago plot; logging.plot=true)"
"""The feature named when matplotlib is missing."""
MAX_PANELS = 24
"""At most this many metrics in ``val_metrics.png``; the rest stay in metrics.jsonl (the figure says how many)."""
PANEL_COLUMNS = 3
PANEL_SIZE = (4.2, 3.0)
"""Inches per panel: wide enough for 4 x ticks such as ``12k`` and a title of two short lines."""
FRAMES = "total_frames"
FRAMES_LABEL = "env frames"


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Records of a metrics.jsonl; a line cut short by a crash is skipped, not fatal."""
    records = []
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


def _series(records: list[dict[str, Any]], key: str, x_key: str) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for record in records:
        value = record.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            xs.append(record.get(x_key, len(xs)))
            ys.append(float(value))
    return xs, ys


def _is_return_curve(key: str) -> bool:
    """Drawn in returns.png: average returns of val and test, overall and per env name."""
    return key.startswith(("val/", "test/")) and "Total Return" in key and "Bottom" not in key


def _natural_order(key: str) -> list[Any]:
    """``Episode 2`` before ``Episode 10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key)]


def val_metric_keys(records: list[dict[str, Any]]) -> list[str]:
    """The val metrics of ``val_metrics.png``: every one with a finite value, except returns.png's curves
    and throughput (FPS), in natural order."""
    keys = sorted({k for r in records for k in r if k.startswith("val/")}, key=_natural_order)
    return [k for k in keys if not _is_return_curve(k) and "FPS" not in k and _series(records, k, FRAMES)[1]]


def _readable_axes(ax: Axes) -> None:
    """At most 4 x ticks in engineering notation (``12k`` rather than ``12000``) and 5 y ticks, so labels
    of neighbouring ticks never run into each other on a small panel."""
    from matplotlib.ticker import EngFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=4, min_n_ticks=2))
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)


def metric_panels(records: list[dict[str, Any]], keys: list[str], *, title: str = "") -> Figure:
    """One panel per metric in ``keys`` (at most :data:`MAX_PANELS`), each against env frames.

    Returns:
        The figure; its visible axes are the panels, in the order of ``keys``.
    """
    plt = require("matplotlib.pyplot", "plot", PLOTTING)
    shown = keys[:MAX_PANELS]
    cols = max(1, min(PANEL_COLUMNS, len(shown)))
    rows = max(1, math.ceil(len(shown) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(PANEL_SIZE[0] * cols, PANEL_SIZE[1] * rows), squeeze=False)
    flat = list(axes.flat)
    for index, (ax, key) in enumerate(zip(flat, shown, strict=False)):
        xs, ys = _series(records, key, FRAMES)
        ax.plot(xs, ys, marker="o", ms=3)
        name = key.split("/", 1)[-1]
        ax.set_title("\n".join(textwrap.wrap(name, 42)[:2]), fontsize=9)
        _readable_axes(ax)
        if index + cols >= len(shown):  # the lowest panel of its column carries the axis name
            ax.set_xlabel(FRAMES_LABEL, fontsize=8)
    for ax in flat[len(shown) :]:
        ax.set_visible(False)
    heading = title
    if len(keys) > len(shown):
        heading = f"{title}: first {len(shown)} of {len(keys)} val metrics (all in metrics.jsonl)".lstrip(
            ": "
        )
    if heading:
        fig.suptitle(heading, fontsize=10)
    fig.tight_layout()
    return fig


def plot_run(run_dir: str | Path) -> list[Path]:
    """Draws the run's curves into ``{run_dir}/plots``; returns the files written.

    - ``returns.png``: val (and test) average return across env names vs env frames, one line per env name.
    - ``val_metrics.png``: one panel per other val metric (bottom-quintile returns, per-attempt success,
      episodes...) vs env frames.
    - ``training.png``: losses vs gradient steps.

    Raises:
        FileNotFoundError: the folder has no metrics.jsonl.
        amago_core.optional.MissingOptionalDependencyError: matplotlib is not installed (``amago-core[plot]``).
    """
    run_dir = Path(run_dir)
    metrics_file = run_dir / "metrics.jsonl"
    if not metrics_file.is_file():
        msg = f"{run_dir} has no metrics.jsonl; is it an amago run folder (`{{ckpt_base_dir}}/{{run_name}}`)?"
        raise FileNotFoundError(msg)
    matplotlib = require("matplotlib", "plot", PLOTTING)
    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", "plot", PLOTTING)

    records = read_metrics(metrics_file)
    out_dir = run_dir / "plots"
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    keys = sorted({k for r in records for k in r})

    fig, ax = plt.subplots(figsize=(7, 4.5))
    drew = False
    for key in keys:
        if _is_return_curve(key):
            xs, ys = _series(records, key, FRAMES)
            if ys:
                main = key.endswith(AVERAGE_RETURN_KEY)
                ax.plot(
                    xs, ys, marker="o", ms=3, lw=2.2 if main else 1.0, label=key, alpha=1.0 if main else 0.6
                )
                drew = True
    if drew:
        _readable_axes(ax)
        ax.set_xlabel(f"{FRAMES_LABEL} ({FRAMES})")
        ax.set_ylabel("return")
        ax.set_title(run_dir.name)
        ax.legend(fontsize=7)
        fig.tight_layout()
        written.append(out_dir / "returns.png")
        fig.savefig(written[-1], dpi=120)
    plt.close(fig)

    others = val_metric_keys(records)
    if others:
        fig = metric_panels(records, others, title=run_dir.name)
        written.append(out_dir / "val_metrics.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)

    losses = [k for k in ("train/Loss", "train/Critic Loss", "train/Actor Loss") if k in keys]
    if losses:
        fig, ax = plt.subplots(figsize=(7, 4))
        for key in losses:
            xs, ys = _series(records, key, "gradient_steps")
            ax.plot(xs, ys, label=key.removeprefix("train/"))
        _readable_axes(ax)
        ax.set_xlabel("gradient steps")
        ax.set_yscale("symlog")
        ax.legend()
        fig.tight_layout()
        written.append(out_dir / "training.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    return written


def plot_finished_run(run_dir: str | Path) -> list[Path]:
    """:func:`plot_run` for the end of a run: without matplotlib it warns in one line and draws nothing.

    The run itself succeeded; a missing plotting library must not turn it into a failure.
    """
    try:
        return plot_run(run_dir)
    except MissingOptionalDependencyError as exc:
        sys.stderr.write(f"amago: warning: no learning curves drawn: {exc} (or set logging.plot=false)\n")
        return []
