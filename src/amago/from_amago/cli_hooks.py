"""``amago import-amago``: an AMAGO v3.3.0 run folder as an amago run folder (a pluggy hook module, import-cheap).

Registered under the ``amago`` entry-point group (``import_amago = "amago.from_amago.cli_hooks"``). Imports only
typer (already loaded by the CLI) until the command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from amago_core.hooks.specs import hookimpl


def import_amago(
    amago_run_dir: Annotated[
        Path,
        typer.Argument(help="The AMAGO run folder ({ckpt_base_dir}/{run_name}, holding ckpts/config.txt)."),
    ],
    out: Annotated[
        Path | None,
        typer.Argument(help="The amago run folder to write (default: AMAGO_RUN_DIR-amago next to it)."),
    ] = None,
    env: Annotated[
        str | None,
        typer.Option(
            "--env",
            help="An amago env id (e.g. frozen-lake, tmaze-passive) whose spaces match the weights; without it the "
            "spaces are read from the weight shapes and `amago eval` has no env.",
        ),
    ] = None,
    max_seq_len: Annotated[
        int | None,
        typer.Option(
            "--max-seq-len", help="The AMAGO run's Experiment(max_seq_len=...) (default 128).", min=1
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an amago run already at OUT.")
    ] = False,
    image_shape: Annotated[
        str | None,
        typer.Option(
            "--image-shape",
            help="For a run with AMAGO's CNNTstepEncoder and no --env: the image observation's shape as the env "
            "gives it, e.g. 84,84,3 (channels last) or 3,84,84 (channels_first runs).",
        ),
    ] = None,
) -> None:
    """Convert an AMAGO v3.3.0 run (config.txt + policy.pt weights) into an amago run folder."""
    from amago.from_amago.run_folder import AmagoImportError, import_amago_run
    from amago_core.cli.output import fail

    target = out if out is not None else amago_run_dir.with_name(amago_run_dir.name + "-amago")
    shape = None
    if image_shape is not None:
        parts = image_shape.replace("x", ",").split(",")
        if not all(p.strip().isdigit() and int(p) > 0 for p in parts) or len(parts) != 3:
            fail(f"--image-shape {image_shape!r} is not three positive integers; pass it like 84,84,3.")
        shape = tuple(int(p) for p in parts)
    try:
        result = import_amago_run(
            amago_run_dir,
            target,
            env_id=env,
            max_seq_len=max_seq_len,
            overwrite=overwrite,
            echo=typer.echo,
            image_shape=shape,
        )
    except AmagoImportError as err:
        fail(str(err))
    epochs = f" and epochs {', '.join(map(str, result.epochs))}" if result.epochs else ""
    typer.echo(f"wrote {result.out} (latest from {result.latest_from}{epochs})")
    typer.echo(f"load it: amago eval {result.out}   or   amago.load_policy({str(result.out)!r})")


@hookimpl
def amago_cli_commands(app: Any) -> None:
    """Adds ``amago import-amago``."""
    app.command("import-amago")(import_amago)
