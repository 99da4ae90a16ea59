"""Shared output helpers for the CLI: one-line errors on stderr, JSON on stdout, rich tables for people."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, NoReturn

import typer

USAGE_ERROR = 2
"""Exit code for a bad name, group, file or value (as for any other usage error)."""
SIGNIFICANT_DIGITS = 6
"""Computed floats in JSON output keep this many significant digits (``-1.0000000149011612`` -> ``-1.0``)."""
TYPED_DIGITS = 12
"""A float that needs at most this many significant digits was typed (a config value): printed exactly."""


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """Prints ``amago: error: <message>`` as one line on stderr and exits."""
    one_line = " ".join(message.split())
    sys.stderr.write(f"amago: error: {one_line}\n")
    raise typer.Exit(code)


def readable_float(value: float) -> float:
    """``value`` rounded to :data:`SIGNIFICANT_DIGITS` if it is the noisy result of arithmetic.

    A float32 mean printed as a Python float (``-1.0000000149011612``) carries digits that mean nothing. A
    value that a person typed (``3e-4``, ``0.9999``, a config's ``1.23456789``) needs few digits and is kept
    exactly, so a printed config reads back as the same config. Integer digits are never rounded away.
    """
    if not math.isfinite(value) or value == 0.0 or float(f"{value:.{TYPED_DIGITS}g}") == value:
        return value
    decimals = SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(abs(value)))
    return round(value, max(decimals, 0))


def _readable(data: Any) -> Any:
    if isinstance(data, float):
        return readable_float(data)
    if isinstance(data, dict):
        return {key: _readable(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_readable(value) for value in data]
    return data


def print_json(data: Any, *, exact_floats: bool = False) -> None:
    """Machine-readable output: plain JSON on stdout, never wrapped or coloured.

    Args:
        data: what to print.
        exact_floats: print every float as it is. Configs and schemas need it: a default such as
            ``math.exp(-5)`` must read back as the same value. Otherwise computed floats (metrics) are rounded
            to :data:`SIGNIFICANT_DIGITS` (see :func:`readable_float`).
    """
    sys.stdout.write(json.dumps(data if exact_floats else _readable(data), indent=2, default=str) + "\n")


def console():
    """A rich console on stdout (imported lazily: JSON output never pays for rich)."""
    from rich.console import Console

    return Console(highlight=False)


STATUS_STYLE = {"ok": "green", "missing": "yellow", "broken": "red", "conflict": "red"}
