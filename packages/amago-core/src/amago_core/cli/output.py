"""Shared output helpers for the CLI: one-line errors on stderr, JSON on stdout, rich tables for people."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer

USAGE_ERROR = 2
"""Exit code for a bad name, group, file or value (as for any other usage error)."""


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """Prints ``amago: error: <message>`` as one line on stderr and exits."""
    one_line = " ".join(message.split())
    sys.stderr.write(f"amago: error: {one_line}\n")
    raise typer.Exit(code)


def print_json(data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, never wrapped or coloured."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def console():
    """A rich console on stdout (imported lazily: JSON output never pays for rich)."""
    from rich.console import Console

    return Console(highlight=False)


STATUS_STYLE = {"ok": "green", "missing": "yellow", "broken": "red", "conflict": "red"}
