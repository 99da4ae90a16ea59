"""Learning curves from a run's local ``metrics.jsonl`` (no wandb needed; matplotlib from ``amago-tools[plot]``).

A long run's file holds millions of records: :func:`read_curves` streams it once and parses at most a few
thousand of them per kind (val, test, train): every k-th one, k doubling as the file grows, plus the last. So
drawing takes seconds and little memory whatever the length of the run.
"""

from __future__ import annotations

import json
import math
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amago_core.experiment.metrics import AVERAGE_RETURN_KEY, EPISODIC_RETURN_KEY
from amago_core.hooks.jsonl_logger import field_text, is_whole_flat_record
from amago_core.io import UnsafePathError, atomic_write, inside
from amago_core.optional import MissingOptionalDependencyError, require

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PLOTTING = "drawing learning curves (amago plot; logging.plot=true)"
"""The feature named when matplotlib is missing."""
PLOT_EXTRA_OF = "amago-tools"
"""The distribution whose ``plot`` extra installs matplotlib."""
MAX_PANELS = 24
"""At most this many metrics in ``val_metrics.png``; the rest stay in metrics.jsonl (the figure says how many)."""
PANEL_COLUMNS = 3
PANEL_SIZE = (4.2, 3.0)
"""Inches per panel: wide enough for 4 x ticks such as ``12k`` and a title of two short lines."""
FRAMES = "total_frames"
FRAMES_LABEL = "env frames"
GRADIENT_STEPS = "gradient_steps"
LOSS_KEYS = ("train/Loss", "train/Critic Loss", "train/Actor Loss")
"""The training curves of ``training.png`` (against gradient steps)."""
TRAIN_RETURN = f"train/{EPISODIC_RETURN_KEY}"
"""The training-episode returns (``train/episodic_return``, overall and ``... in {name}``), drawn dashed in
``returns.png`` against env frames."""
COUNT_KEYS = ("Episodes",)
"""Val metrics that count rather than measure: ``val_metrics.png`` skips them when they never change (a fixed
evaluation budget finishes the same number of episodes every time)."""
PLOT_FILES = ("returns.png", "val_metrics.png", "training.png")
"""The figures :func:`plot_run` draws into ``{run_dir}/plots``."""
MAX_POINTS = 2_000
"""Per kind of record (val, test, train), a file with fewer than twice this many is drawn whole; a longer one
as every k-th record (k a power of two: between this many and twice this many of them) plus the last one."""


@dataclass
class Curve:
    """One metric's points, in the order of the file."""

    xs: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)


class _EveryKth:
    """Which lines of one kind to parse: every ``stride``-th, the stride doubling (and the kept records thinned
    to its multiples) whenever ``2 * max_points`` are held, so memory and parsing stay bounded."""

    def __init__(self, max_points: int):
        self.max_points = max(1, int(max_points))
        self.stride = 1
        self.seen = 0
        self.kept: list[tuple[int, dict[str, Any]]] = []
        self.last: bytes | None = None
        """The newest line not kept (parsed at the end, so a curve always reaches the newest record)."""

    def wants(self, line: bytes) -> bool:
        """Counts ``line``; True when it is to be parsed and :meth:`keep` called with its record."""
        index = self.seen
        self.seen += 1
        if index % self.stride:
            self.last = line
            return False
        self.last = None
        return True

    def keep(self, record: dict[str, Any]) -> None:
        self.kept.append((self.seen - 1, record))
        if len(self.kept) >= 2 * self.max_points:
            self.stride *= 2
            self.kept = [(index, kept) for index, kept in self.kept if index % self.stride == 0]

    def records(self, parse: Callable[[bytes], dict[str, Any] | None]) -> list[dict[str, Any]]:
        """The kept records, then the newest one if it was not kept."""
        records = [record for _, record in self.kept]
        newest = parse(self.last) if self.last is not None else None
        return [*records, newest] if newest is not None else records


def _finite_number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _number_text(text: bytes | None) -> float | None:
    """A finite number from a value's JSON text (:func:`field_text`); None for anything else, as a record's
    ``nan`` strings, booleans and strings are no points of a curve."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _add_record(curves: dict[str, Curve], record: Mapping[str, Any], wanted: Callable[[str], bool]) -> None:
    frames = _finite_number(record.get(FRAMES))
    steps = _finite_number(record.get(GRADIENT_STEPS))
    for key, value in record.items():
        y = _finite_number(value) if wanted(key) else None
        if y is None:
            continue
        curve = curves.get(key)
        if curve is None:
            curve = curves[key] = Curve()
        x = steps if key.startswith("train/") and not key.startswith(TRAIN_RETURN) else frames
        curve.xs.append(len(curve.xs) if x is None else x)  # no x-axis in the record: its place in the curve
        curve.ys.append(y)


def _is_curve_key(key: str) -> bool:
    """What :func:`read_curves` keeps: every val and test metric, the training losses and episode returns."""
    return key.startswith(("val/", "test/", TRAIN_RETURN)) or key in LOSS_KEYS


def _every_key(key: str) -> bool:
    return True


class _LineParser:
    """Parses sampled lines into records, counting those nested more deeply than Python's JSON parser goes."""

    def __init__(self) -> None:
        self.too_deep = 0

    def record(self, line: bytes) -> dict[str, Any] | None:
        """One line's record; None for a line cut short by a crash, one that holds no JSON object, or one nested
        more deeply than Python parses (no line amago writes: its records are flat)."""
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        except RecursionError:
            self.too_deep += 1
            return None
        return record if isinstance(record, dict) else None

    def losses(self, line: bytes) -> dict[str, Any] | None:
        """The losses (and gradient steps) of a train record; a whole one is picked apart without parsing its
        other metrics (:func:`amago_core.hooks.jsonl_logger.field_text`)."""
        if not is_whole_flat_record(line):
            return self.record(line)
        picked = {key: _number_text(field_text(line, key)) for key in (*LOSS_KEYS, GRADIENT_STEPS)}
        return {key: value for key, value in picked.items() if value is not None}


def curves_from_records(records: Iterable[Mapping[str, Any]]) -> dict[str, Curve]:
    """Every numeric metric of ``records`` as a curve (records in memory; :func:`read_curves` reads a file)."""
    curves: dict[str, Curve] = {}
    for record in records:
        _add_record(curves, record, _every_key)
    return curves


_HEAD = 64
"""The logger writes ``{"step": N, "{section}/...``: a record's section is in its first bytes, so most lines are
told apart without scanning their whole length."""


_TRAIN_RETURN_TEXT = f'"{TRAIN_RETURN}'.encode()


def _kind(text: bytes) -> str | None:
    """``val``, ``test``, ``returns`` (training-episode returns, one record per epoch) or ``train`` (losses)
    for a record holding such a key (val first: it holds the most curves)."""
    if b'"val/' in text:
        return "val"
    if b'"test/' in text:
        return "test"
    if _TRAIN_RETURN_TEXT in text:
        return "returns"
    return "train" if b'"train/' in text else None


def read_curves(
    path: Path, *, max_points: int = MAX_POINTS, warn: Callable[[str], None] | None = None
) -> dict[str, Curve]:
    """The val and test metrics (against env frames) and the training losses (against gradient steps) of a
    metrics.jsonl, streamed.

    Lines are told apart by a substring (a val, test or train key); other lines (the dataset records) are
    never parsed. Of each kind at most ``2 * max_points`` records are parsed and held (:data:`MAX_POINTS`),
    evenly spread over the file, plus the newest. A line cut short by a crash is skipped, as by
    :func:`~amago_core.hooks.jsonl_logger.read_metrics`; so is a line nested more deeply than Python parses,
    which ``warn`` is told about in one line.
    """
    kinds = {kind: _EveryKth(max_points) for kind in ("val", "test", "returns", "train")}
    parser = _LineParser()
    with Path(path).open("rb") as handle:
        for line in handle:
            kind = _kind(line[:_HEAD]) or _kind(line)
            if kind is None:
                continue
            sampler = kinds[kind]
            if sampler.wants(line):
                record = parser.losses(line) if kind == "train" else parser.record(line)
                if record is not None:
                    sampler.keep(record)
    curves: dict[str, Curve] = {}
    for kind, sampler in kinds.items():
        for record in sampler.records(parser.losses if kind == "train" else parser.record):
            _add_record(curves, record, _is_curve_key)
    if parser.too_deep and warn is not None:
        warn(
            f"skipped {parser.too_deep} line(s) of {path} nested more deeply than Python parses: amago writes "
            "flat records, so they are no run's metrics; remove them"
        )
    return curves


def _is_return_curve(key: str) -> bool:
    """Drawn in returns.png: average returns of val and test, overall and per env name, and the training-episode
    returns (``train/episodic_return``)."""
    if key.startswith(TRAIN_RETURN):
        return True
    return key.startswith(("val/", "test/")) and "Total Return" in key and "Bottom" not in key


def _is_constant_count(key: str, curve: Curve) -> bool:
    """A count (:data:`COUNT_KEYS`) that never changed: a flat line that says nothing about learning."""
    return key.split("/", 1)[-1] in COUNT_KEYS and len(set(curve.ys)) <= 1


def _natural_order(key: str) -> list[Any]:
    """``Episode 2`` before ``Episode 10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key)]


def _panel_keys(curves: Mapping[str, Curve]) -> list[str]:
    keys = sorted((k for k, curve in curves.items() if k.startswith("val/") and curve.ys), key=_natural_order)
    return [
        k for k in keys if not _is_return_curve(k) and "FPS" not in k and not _is_constant_count(k, curves[k])
    ]


def val_metric_keys(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The val metrics of ``val_metrics.png``: every one with a finite value, except returns.png's curves,
    throughput (FPS) and counts that never change (:data:`COUNT_KEYS`), in natural order."""
    return _panel_keys(curves_from_records(records))


def readable_axes(ax: Axes) -> None:
    """At most 4 x ticks in engineering notation (``12k`` rather than ``12000``) and 5 y ticks, so labels
    of neighbouring ticks never run into each other on a small panel."""
    from matplotlib.ticker import EngFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=4, min_n_ticks=2))
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)


def metric_panels(records: Iterable[Mapping[str, Any]], keys: list[str], *, title: str = "") -> Figure:
    """One panel per metric in ``keys`` (at most :data:`MAX_PANELS`), each against env frames.

    Returns:
        The figure; its visible axes are the panels, in the order of ``keys``.
    """
    return curve_panels(curves_from_records(records), keys, title=title)


def curve_panels(curves: Mapping[str, Curve], keys: list[str], *, title: str = "") -> Figure:
    """:func:`metric_panels` from curves (:func:`read_curves`)."""
    plt = require("matplotlib.pyplot", "plot", PLOTTING, PLOT_EXTRA_OF)
    shown = keys[:MAX_PANELS]
    cols = max(1, min(PANEL_COLUMNS, len(shown)))
    rows = max(1, math.ceil(len(shown) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(PANEL_SIZE[0] * cols, PANEL_SIZE[1] * rows), squeeze=False)
    flat = list(axes.flat)
    for index, (ax, key) in enumerate(zip(flat, shown, strict=False)):
        xs, ys = (curves[key].xs, curves[key].ys) if key in curves else ([], [])
        ax.plot(xs, ys, marker="o", ms=3)
        name = key.split("/", 1)[-1]
        ax.set_title("\n".join(textwrap.wrap(name, 42)[:2]), fontsize=9)
        readable_axes(ax)
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

    - ``returns.png``: val (and test) average return across env names vs env frames, one line per env name;
      the training episodes' returns (``train/episodic_return``) dashed.
    - ``val_metrics.png``: one panel per other val metric (bottom-quintile returns, per-attempt success,
      episodes...) vs env frames.
    - ``training.png``: losses vs gradient steps.

    The file is streamed (:func:`read_curves`): a long run's curves are drawn from a few thousand of its
    records, evenly spread, and its newest.

    Raises:
        FileNotFoundError: the folder has no metrics.jsonl.
        amago_core.io.UnsafePathError: ``plots`` or a figure's file is a symlink (nothing is written there).
        amago_core.optional.MissingOptionalDependencyError: matplotlib is not installed (``amago-tools[plot]``).
    """
    run_dir = Path(run_dir)
    metrics_file = run_dir / "metrics.jsonl"
    if not metrics_file.is_file():
        msg = f"{run_dir} has no metrics.jsonl; is it an amago run folder (`{{ckpt_base_dir}}/{{run_name}}`)?"
        raise FileNotFoundError(msg)
    matplotlib = require("matplotlib", "plot", PLOTTING, PLOT_EXTRA_OF)
    matplotlib.use("Agg")
    plt = require("matplotlib.pyplot", "plot", PLOTTING, PLOT_EXTRA_OF)

    out_dir = _plots_folder(run_dir)
    curves = read_curves(metrics_file, warn=_warn)
    out_dir.mkdir(exist_ok=True)
    written: list[Path] = []

    def save(fig: Any, name: str, dpi: int) -> None:
        written.append(out_dir / name)
        atomic_write(written[-1], lambda tmp: fig.savefig(tmp, dpi=dpi, format="png"), root=run_dir)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    drew = False
    per_name_train = [k for k in curves if k.startswith(f"{TRAIN_RETURN} in ")]
    for key in sorted(curves):
        if key in per_name_train and len(per_name_train) == 1:
            continue  # one env name: its curve is the overall one
        if _is_return_curve(key):
            xs, ys = curves[key].xs, curves[key].ys
            main = key.endswith(AVERAGE_RETURN_KEY) or key == TRAIN_RETURN
            # Training episodes explore and end every epoch: many noisy points, drawn dashed without markers.
            train = key.startswith(TRAIN_RETURN)
            ax.plot(
                xs,
                ys,
                marker=None if train else "o",
                ms=3,
                ls="--" if train else "-",
                lw=2.2 if main else 1.0,
                label=key,
                alpha=1.0 if main else 0.6,
            )
            drew = True
    if drew:
        readable_axes(ax)
        ax.set_xlabel(f"{FRAMES_LABEL} ({FRAMES})")
        ax.set_ylabel("return")
        ax.set_title(run_dir.name)
        ax.legend(fontsize=7)
        fig.tight_layout()
        save(fig, "returns.png", 120)
    plt.close(fig)

    others = _panel_keys(curves)
    if others:
        fig = curve_panels(curves, others, title=run_dir.name)
        save(fig, "val_metrics.png", 110)
        plt.close(fig)

    losses = [k for k in LOSS_KEYS if k in curves]
    if losses:
        fig, ax = plt.subplots(figsize=(7, 4))
        for key in losses:
            xs, ys = curves[key].xs, curves[key].ys
            # A short run logs a few losses: markers keep single points visible.
            ax.plot(xs, ys, label=key.removeprefix("train/"), marker="o" if len(xs) < 50 else None, ms=3)
        readable_axes(ax)
        ax.set_xlabel("gradient steps")
        ax.set_ylabel("loss (symlog scale)")
        ax.set_yscale("symlog")
        ax.set_title(f"{run_dir.name}: training losses")
        ax.legend()
        fig.tight_layout()
        save(fig, "training.png", 110)
        plt.close(fig)
    return written


def _warn(line: str) -> None:
    sys.stderr.write(f"amago: warning: {line}\n")


def _plots_folder(run_dir: Path) -> Path:
    """``run_dir/plots``, once it and every figure's path in it are checked: a run folder may come from anyone,
    and a planted ``plots`` link (or ``plots/returns.png`` link) must not steer the PNGs elsewhere. All are
    checked before the first figure is written, so a refused one leaves the folder as it was; each figure is
    then written under a temp name and renamed (never through a symbolic or hard link).

    Raises:
        amago_core.io.UnsafePathError: ``plots`` or a figure's path is a symlink, or ``plots`` is a file.
    """
    out_dir = inside(run_dir, run_dir / "plots")
    if out_dir.exists() and not out_dir.is_dir():
        msg = f"{out_dir} is a file where amago draws the run's plots: move it away and retry"
        raise UnsafePathError(msg, out_dir)
    for name in PLOT_FILES:
        inside(run_dir, out_dir / name)
    return out_dir


def plot_finished_run(run_dir: str | Path) -> list[Path]:
    """:func:`plot_run` for the end of a run: without matplotlib, or with a symlink where a figure would go, it
    warns in one line and draws nothing.

    The run itself succeeded; a missing plotting library must not turn it into a failure.
    """
    try:
        return plot_run(run_dir)
    except MissingOptionalDependencyError as exc:
        sys.stderr.write(f"amago: warning: no learning curves drawn: {exc} (or set logging.plot=false)\n")
        return []
    except UnsafePathError as exc:
        # The run's own files are saved; only its figures had nowhere safe to go.
        sys.stderr.write(f"amago: warning: no learning curves drawn: {exc}\n")
        return []
