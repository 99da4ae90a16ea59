"""`amago config reference`: the configuration reference as Markdown (added to amago-core's ``amago config`` group).

Torch-free: the reference is read from ``ExperimentConfig``'s fields and docstrings (:mod:`amago_tools.config_reference`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from amago_tools.generated_block import write_generated


def reference_command(
    update: Annotated[
        Path | None,
        typer.Option(
            "--update",
            help="Rewrite the generated block of this Markdown page (between its two marker comments) instead "
            "of printing.",
        ),
    ] = None,
) -> None:
    """Print the configuration reference (every section and field, with type, default and docstring) as Markdown."""
    from amago_tools.config_reference import REFERENCE_BLOCK, config_reference

    write_generated(config_reference(), REFERENCE_BLOCK, update)
