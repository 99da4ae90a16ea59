"""`amago compare`: learning curves and rliable's final tables over groups of seeds. Torch-free: the computation
(numpy, rliable, matplotlib) is imported inside the command body."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from amago_core.cli.errors import DebugFlag, debugging, one_line_errors
from amago_core.cli.output import print_json

if TYPE_CHECKING:
    from amago_studies.compare import Comparison

DEFAULT_METRIC = "val/Average Total Return (Across All Env Names)"
"""As ``amago_studies.compare.DEFAULT_METRIC`` (repeated: that module imports numpy)."""
DEFAULT_REPS, REPS_MIN, REPS_MAX = 2_000, 100, 100_000
"""As ``amago_studies.compare``'s constants of the same names (repeated for the help text: numpy again)."""


def compare_command(
    folders: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN_OR_GROUP...",
            help="Run folders, or group folders whose subfolders (seed_0/, seed_1/...) are runs of one config.",
        ),
    ],
    labels: Annotated[
        list[str] | None,
        typer.Option("--label", help="A group's name (default: its folder's); once per folder, in order."),
    ] = None,
    metric: Annotated[str, typer.Option("--metric", help="The val metric compared.")] = DEFAULT_METRIC,
    x: Annotated[
        str,
        typer.Option(
            "--x",
            help="The curves' x axis: steps (env steps), updates, epochs or minutes (training wall time).",
        ),
    ] = "steps",
    final: Annotated[
        str,
        typer.Option(
            "--final",
            help="Final score per seed: test (its test/ value), val (the last --last val evaluations' mean), "
            "or auto (test when every run has one).",
        ),
    ] = "auto",
    last: Annotated[int, typer.Option("--last", min=1, help="Val evaluations averaged per seed.")] = 1,
    target: Annotated[
        float | None,
        typer.Option("--target", help="The score that counts as solved; the optimality gap needs it."),
    ] = None,
    reps: Annotated[
        int,
        typer.Option(
            "--reps",
            help=f"Bootstrap replications, {REPS_MIN:,} to {REPS_MAX:,} (rliable's paper: 50,000; about 30 s "
            "per group).",
        ),
    ] = DEFAULT_REPS,
    seed: Annotated[int, typer.Option("--seed", help="The bootstraps' random seed.")] = 0,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Where compare.png, compare.md and compare.json (and compare_attempts.png) go (default: "
            "compare/ next to the compared folders, in their common parent: runs/compare/ for runs/a runs/b). "
            "No file is written through a symlink.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print compare.json on stdout.")] = False,
    debug: DebugFlag = False,
) -> None:
    """Compare groups of seeds: mean curves with 95 % bootstrap bands, and rliable's IQM, mean, median, optimality gap (with --target) and probability of improvement of the final scores, with intervals.

    Multi-task runs add a table with the env names as tasks and one per env; meta-RL suites that log a metric per attempt add its final mean per attempt (compare_attempts.png). A seed folder without metrics, a group evaluated on other envs than the first, a group none of whose seeds is usable, or (for --x minutes) a run without wall time is left out with one line on stderr. The outputs go to compare/ next to the compared folders unless --out says otherwise. Needs rliable: pip install 'amago-studies\\[compare]'.
    """
    from amago_studies.compare import compare, markdown, write_outputs

    def warn(line: str) -> None:
        sys.stderr.write(f"amago: warning: {' '.join(line.split())}\n")

    with one_line_errors(debugging(debug), usage=True):
        result = compare(
            folders,
            labels=labels or None,
            metric=metric,
            x=x,
            final=final,
            last=last,
            target=target,
            reps=reps,
            seed=seed,
            warn=warn,
        )
        # Without --out amago chooses compare/ itself, so compare/ must be a real folder too (not a link).
        written = write_outputs(result, out) if out is not None else _write_next_to(result, folders)
    if as_json:
        print_json(result.as_json())
        return
    sys.stdout.write(markdown(result).split("\n## ", 1)[0].rstrip() + "\n\n")
    for path in written:
        sys.stdout.write(f"{path}\n")


def _write_next_to(result: Comparison, folders: list[Path]) -> list[Path]:
    """The outputs in ``compare/`` next to the compared folders (:func:`amago_studies.compare.default_out`)."""
    from amago_studies.compare import default_out, write_outputs

    out = default_out(folders)
    return write_outputs(result, out, root=out.parent)
