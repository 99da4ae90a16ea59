"""`amago config schema` and `amago config show` (the latter is `amago run --dry-run` under another name).

``app`` is the ``amago config`` group: a plugin adds a subcommand to it from its ``amago_cli_commands`` hook
(amago-tools adds ``amago config reference``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from amago_core.cli.output import print_json
from amago_core.cli.run_cmd import config_show_command, plugin_run_options, with_run_options

app = typer.Typer(help="Inspect and export the experiment configuration.", no_args_is_help=True)
# `amago run`'s options, the plugins' included, minus --dry-run (which `show` always is).
app.command("show")(with_run_options(config_show_command, plugin_run_options(), drop=("dry_run",)))


@app.command("schema")
def schema_command(
    output: Annotated[
        Path | None, typer.Option("--output", help="Write the schema here instead of stdout.")
    ] = None,
) -> None:
    """Print the JSON Schema of the experiment config, including every installed component's options."""
    from amago_core.config.experiment import ExperimentConfig

    schema = ExperimentConfig.model_json_schema()
    if output is None:
        print_json(schema, exact_floats=True)
    else:
        output.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
        sys.stderr.write(f"wrote {output}\n")
