"""amago-studies' hooks (registered as ``studies = "amago_studies.cli_hooks"`` under the ``amago`` entry-point
group): the ``compare``, ``sweep`` and ``bench memory`` commands, and ``--seeds``/``--parallel`` on ``amago run``.

Import-cheap like every hook module: typer and amago-core's torch-free hook types only; the studies' code loads
when a command runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import typer

from amago_core.hooks.specs import RunOption, RunRequest, hookimpl


@hookimpl
def amago_cli_commands(app: Any) -> None:
    """Adds ``amago compare``, ``amago sweep`` and ``amago bench memory``."""
    from amago_studies import bench_memory_cmd, sweep_cmd
    from amago_studies.compare_cmd import compare_command

    app.command("compare")(compare_command)
    app.add_typer(sweep_cmd.app, name="sweep")
    app.add_typer(bench_memory_cmd.app, name="bench")


@hookimpl
def amago_run_options() -> Sequence[RunOption]:
    """``--seeds`` and ``--parallel``."""
    return [
        RunOption(
            "seeds",
            Annotated[
                str | None,
                typer.Option(
                    "--seeds",
                    help="Run the same config under several seeds into runs/NAME/seed_K/: a count (5: seeds "
                    "0..4, or --seed B..B+4) or a list (1,4,9). `--resume runs/NAME` finishes the seeds that did "
                    "not finish; one process drives a group at a time, and its seed_K/ must be real folders.",
                ),
            ],
        ),
        RunOption(
            "parallel",
            Annotated[
                int | None, typer.Option("--parallel", help="With --seeds: seeds run at a time (default 1).")
            ],
        ),
    ]


@hookimpl
def amago_run_begin(request: RunRequest) -> int | None:
    """Checks ``--seeds``/``--parallel`` and resumes a seed group given to ``--resume``."""
    from amago_studies.seeded_runs import begin

    return begin(request)


@hookimpl
def amago_run_planned(request: RunRequest) -> int | None:
    """Runs the plan once per seed when ``--seeds`` is given."""
    from amago_studies.seeded_runs import run_seeds

    return run_seeds(request)
