"""Learning curves from a run's local ``metrics.jsonl`` (no wandb needed)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from amago_core.experiment.metrics import AVERAGE_RETURN_KEY


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


def plot_run(run_dir: str | Path) -> list[Path]:
    """Draws the run's curves into ``{run_dir}/plots``; returns the files written.

    - ``returns.png``: val (and test) average return across env names vs env frames, one line per env name.
    - ``val_metrics.png``: every other val metric vs env frames (special metrics such as per-attempt success).
    - ``training.png``: losses vs gradient steps.

    Raises:
        FileNotFoundError: the folder has no metrics.jsonl.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    metrics_file = run_dir / "metrics.jsonl"
    if not metrics_file.is_file():
        msg = f"{run_dir} has no metrics.jsonl; is it an amago run folder (`{{ckpt_base_dir}}/{{run_name}}`)?"
        raise FileNotFoundError(msg)
    records = read_metrics(metrics_file)
    out_dir = run_dir / "plots"
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    keys = sorted({k for r in records for k in r})

    fig, ax = plt.subplots(figsize=(7, 4.5))
    drew = False
    for key in keys:
        if key.startswith(("val/", "test/")) and "Total Return" in key and "Bottom" not in key:
            xs, ys = _series(records, key, "total_frames")
            if ys:
                main = key.endswith(AVERAGE_RETURN_KEY)
                ax.plot(
                    xs, ys, marker="o", ms=3, lw=2.2 if main else 1.0, label=key, alpha=1.0 if main else 0.6
                )
                drew = True
    if drew:
        ax.set_xlabel("env frames (total_frames)")
        ax.set_ylabel("return")
        ax.set_title(run_dir.name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        written.append(out_dir / "returns.png")
        fig.savefig(written[-1], dpi=120)
    plt.close(fig)

    others = [k for k in keys if k.startswith("val/") and "Total Return" not in k and "FPS" not in k]
    others = [k for k in others if _series(records, k, "total_frames")[1]][:12]
    if others:
        cols = min(3, len(others))
        rows = math.ceil(len(others) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
        for ax, key in zip(axes.flat, others, strict=False):
            xs, ys = _series(records, key, "total_frames")
            ax.plot(xs, ys, marker="o", ms=3)
            ax.set_title(key.removeprefix("val/"), fontsize=8)
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[len(others) :]:
            ax.axis("off")
        fig.tight_layout()
        written.append(out_dir / "val_metrics.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)

    losses = [k for k in ("train/Loss", "train/Critic Loss", "train/Actor Loss") if k in keys]
    if losses:
        fig, ax = plt.subplots(figsize=(7, 4))
        for key in losses:
            xs, ys = _series(records, key, "gradient_steps")
            ax.plot(xs, ys, label=key.removeprefix("train/"))
        ax.set_xlabel("gradient steps")
        ax.set_yscale("symlog")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        written.append(out_dir / "training.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    return written
