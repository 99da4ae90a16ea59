"""``amago plot RUN_DIR``: a run's learning curves as PNG files."""

from __future__ import annotations

import sys

from amago_core.cli.errors import DebugFlag, debugging, one_line_errors
from amago_core.cli.eval_cmd import RunDir
from amago_core.cli.output import fail


def plot_command(
    run_dir: RunDir,
    debug: DebugFlag = False,
) -> None:
    """Draw learning curves (PNG) from the run's metrics.jsonl into RUN_DIR/plots."""
    from amago_tools.plotting import plot_run

    with one_line_errors(debugging(debug), usage=True):
        written = plot_run(run_dir)
    if not written:
        fail(f"{run_dir}/metrics.jsonl has no curves to draw yet (no val/ or train/ records)")
    for path in written:
        sys.stdout.write(f"{path}\n")
