"""``amago import-amago`` and ``amago migrate-gin``: AMAGO's commands (a pluggy hook module, import-cheap).

``import-amago`` turns an AMAGO run folder into an amago run folder; ``migrate-gin`` translates an AMAGO gin file
into amago settings (``-o`` lines or a TOML config). Both read gin through :mod:`amago.from_amago.gin`.

Registered under the ``amago`` entry-point group (``import_amago = "amago.from_amago.cli_hooks"``). Imports only
typer (already loaded by the CLI) until a command runs.
"""

from __future__ import annotations

import os
import sys
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

    # Named from the absolute path: `.` or `..` has no name of its own to add "-amago" to.
    source = Path(os.path.abspath(amago_run_dir))
    target = out if out is not None else source.with_name(source.name + "-amago")
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


def migrate_gin_command(
    gin_file: Annotated[
        Path | None,
        typer.Argument(
            metavar="FILE.gin",
            help="An AMAGO gin file (a config file of its scripts, or a run's ckpts/config.txt); includes are "
            "followed.",
        ),
    ] = None,
    as_toml: Annotated[
        bool,
        typer.Option("--toml", help="Print a TOML config for `amago run -c` instead of `-o` lines."),
    ] = False,
    reference: Annotated[
        bool,
        typer.Option(
            "--reference",
            help="Print the whole mapping (every AMAGO configurable and parameter) as Markdown instead.",
        ),
    ] = False,
    update: Annotated[
        Path | None,
        typer.Option(
            "--update",
            metavar="PAGE",
            help="Rewrite the mapping's generated block of this Markdown page (between its two marker comments).",
        ),
    ] = None,
) -> None:
    """Translate an AMAGO gin file into amago settings: one `-o key=value` per line (or TOML with --toml).

    Each binding of one of AMAGO v3.3.0's classes becomes the amago setting that does the same, written with the component it belongs to: `TformerTrajEncoder.n_layers = 4` is `-o traj_encoder.kind=transformer -o traj_encoder.n_layers=4`.

    A binding that is not translated (set by the run, no counterpart, a class of your own, no effect in AMAGO either) gets one line on stderr saying why. The exit status is 0 unless the file cannot be read.
    """
    from amago.from_amago import gin
    from amago_core.cli.output import fail

    if reference or update is not None:
        if gin_file is not None:
            fail("--reference and --update print the mapping itself; leave out FILE.gin, or drop the option")
        _write_reference(update)
        return
    if gin_file is None:
        fail("give an AMAGO gin file (amago migrate-gin my_config.gin), or --reference for the whole mapping")
    try:
        statements = gin.read_gin(gin_file)
    except gin.GinSyntaxError as exc:
        fail(str(exc))
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        fail(f"cannot read {gin_file}: {reason}; pass the path of an existing gin file")
    migration = gin.migrate(statements)
    for note in migration.notes:
        sys.stderr.write(f"{note}\n")
    if as_toml:
        text, left_out = migration.toml()
        sys.stdout.write(text)
        for line in left_out:
            sys.stderr.write(f"{gin_file}: {line}\n")
    else:
        for line in migration.override_lines():
            sys.stdout.write(line + "\n")
    parts = [f"{migration.translated} binding(s) became {len(migration.settings)} setting(s)"]
    if migration.as_amago_does:
        # a run's config.txt lists every default, most of them what amago does anyway: counted, not listed
        parts.append(f"{len(migration.as_amago_does)} set what amago always does (AMAGO's defaults)")
    if migration.notes:
        parts.append(f"{len(migration.notes)} not translated (the lines above say why)")
    sys.stderr.write(f"amago migrate-gin: {'; '.join(parts)}\n")


def _write_reference(page: Path | None) -> None:
    from amago.from_amago.gin import GIN_MAPPING_BLOCK, gin_reference
    from amago_tools.generated_block import write_generated

    write_generated(gin_reference(), GIN_MAPPING_BLOCK, page)


@hookimpl
def amago_cli_commands(app: Any) -> None:
    """Adds ``amago import-amago`` and ``amago migrate-gin``."""
    app.command("import-amago")(import_amago)
    app.command("migrate-gin")(migrate_gin_command)
