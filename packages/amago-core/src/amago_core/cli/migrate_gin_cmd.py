"""`amago migrate-gin`: an AMAGO gin file as amago settings (``-o`` lines or a TOML config).

The translation and the mapping it reads live in :mod:`amago_core.cli.gin_migration` (standard library only);
this module is the command line around them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from amago_core.cli.output import fail, write_generated


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
    from amago_core.cli import gin_migration

    if reference or update is not None:
        if gin_file is not None:
            fail("--reference and --update print the mapping itself; leave out FILE.gin, or drop the option")
        _write_reference(update)
        return
    if gin_file is None:
        fail("give an AMAGO gin file (amago migrate-gin my_config.gin), or --reference for the whole mapping")
    try:
        statements = gin_migration.read_gin(gin_file)
    except gin_migration.GinSyntaxError as exc:
        fail(str(exc))
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        fail(f"cannot read {gin_file}: {reason}; pass the path of an existing gin file")
    migration = gin_migration.migrate(statements)
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
    from amago_core.cli.gin_migration import GIN_MAPPING_BLOCK, gin_reference

    write_generated(gin_reference(), GIN_MAPPING_BLOCK, page)
