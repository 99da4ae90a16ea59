"""``amago --version``: the versions of amago's own distributions (read from their metadata; imports nothing)."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer

DISTRIBUTIONS = ("amago", "amago-core", "amago-nets", "amago-agents", "amago-envs")
"""amago's own distributions, the meta-package first; plugins are listed by `amago plugins`."""


def version_lines() -> list[str]:
    """``<distribution> <version>`` for each of :data:`DISTRIBUTIONS`, ``(not installed)`` for the absent."""
    lines = []
    for name in DISTRIBUTIONS:
        try:
            lines.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            lines.append(f"{name} (not installed)")
    return lines


def _print_versions(asked: bool) -> None:
    if asked:
        sys.stdout.write("\n".join(version_lines()) + "\n")
        raise typer.Exit()


def top_level_options(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_versions,
            is_eager=True,
            help="Print the versions of amago's distributions and exit.",
        ),
    ] = False,
) -> None:
    """Options of ``amago`` itself, before any command (Typer's app callback)."""
