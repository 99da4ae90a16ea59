"""``amago d4rl-convert``: the dataset converter as an ``amago`` command (a pluggy hook module, import-cheap).

Registered under the ``amago`` entry-point group (``d4rl = "amago_envs.suites.d4rl.cli_hooks"``); without that
registration the same converter runs as ``python -m amago_envs.suites.d4rl.convert``. Imports only typer
(already loaded by the CLI) until the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from amago_core.hooks.specs import hookimpl


def d4rl_convert(
    dataset_id: Annotated[
        str, typer.Argument(help="A minari dataset available locally (MINARI_DATASETS_PATH).")
    ],
    run_name: Annotated[
        str, typer.Option("--run-name", help="The run name you will pass to `amago run --name`.")
    ],
    ckpt_base_dir: Annotated[
        Path, typer.Option("--ckpt-base-dir", help="The run's run.ckpt_base_dir.")
    ] = Path("runs"),
    save_as: Annotated[str, typer.Option("--save-as", help="npz or npz-compressed.")] = "npz",
    max_episodes: Annotated[
        int | None, typer.Option("--max-episodes", help="Only the first N episodes.")
    ] = None,
) -> None:
    """Write a local minari dataset into a run's protected buffer (then: amago run --env d4rl --name RUN)."""
    from amago_core.cli.output import fail
    from amago_envs.suites.d4rl.convert import convert_dataset
    from amago_envs.suites.d4rl.datasets import DatasetNotFoundError

    try:
        files = convert_dataset(
            dataset_id, ckpt_base_dir, run_name, save_as=save_as, max_episodes=max_episodes
        )
    except (DatasetNotFoundError, ValueError) as err:
        fail(str(err))
    folder = ckpt_base_dir / run_name / "buffer" / "protected"
    typer.echo(f"wrote {len(files)} episodes of {dataset_id} to {folder}")


@hookimpl
def amago_cli_commands(app: Any) -> None:
    """Adds ``amago d4rl-convert``."""
    app.command("d4rl-convert")(d4rl_convert)
