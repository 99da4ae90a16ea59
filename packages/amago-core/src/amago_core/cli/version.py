"""``amago --version``: the versions of amago's own distributions (read from their metadata; imports nothing)."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from typing import Annotated

import typer

from amago_core.plugins.discovery import META_DISTRIBUTION, builtin_distributions, normalize_distribution

CORE_DISTRIBUTION = "amago-core"
PLUGIN_PREFIX = "amago-plugin-"
"""The prefix `amago plugin new` gives third-party plugins: never one of amago's own distributions."""
_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def own_distributions() -> list[str]:
    """amago's own distributions, the meta-package first, then amago-core, then the rest by name.

    They come from the installed metadata, as the plugin switches read them (``builtin_distributions``): the
    ``amago`` meta-package and what it requires, plus amago-core. Without the meta-package nothing names the
    rest, so the installed ``amago-*`` distributions that require amago-core stand in for them (plugins named
    ``amago-plugin-*`` excepted; `amago plugins` lists those).
    """
    names = set(builtin_distributions())
    if not _installed(META_DISTRIBUTION):
        names.update(_installed_siblings())
    first = [META_DISTRIBUTION, CORE_DISTRIBUTION]
    return first + sorted(names - set(first))


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _installed_siblings() -> set[str]:
    found = set()
    for dist in metadata.distributions():
        name = normalize_distribution(dist.metadata["Name"] or "")
        if not name.startswith("amago-") or name.startswith(PLUGIN_PREFIX):
            continue
        for requirement in dist.requires or []:  # `amago-core>=0.1,<0.2`, `amago_core[plot]; extra == "x"`
            match = _REQUIREMENT_NAME.match(requirement)
            if match and normalize_distribution(match.group()) == CORE_DISTRIBUTION:
                found.add(name)
                break
    return found


def version_lines() -> list[str]:
    """``<distribution> <version>`` for each of :func:`own_distributions`, ``(not installed)`` for the absent."""
    lines = []
    for name in own_distributions():
        try:
            lines.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
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
