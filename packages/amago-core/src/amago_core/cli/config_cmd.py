"""`amago config schema` and `amago config show`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from amago_core.cli.output import fail, print_json

app = typer.Typer(help="Inspect and export the experiment configuration.", no_args_is_help=True)

ConfigFiles = Annotated[
    list[Path] | None,
    typer.Option("-c", "--config", help="Config file (.toml, .json, .yaml); repeatable, later wins."),
]
Overrides = Annotated[
    list[str] | None,
    typer.Option("-o", "--override", help="section.field=value; repeatable, highest precedence."),
]


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
        print_json(schema)
    else:
        output.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
        sys.stderr.write(f"wrote {output}\n")


def load_or_fail(
    files: list[Path] | None, overrides: list[str] | None, flags: dict | None = None, base: dict | None = None
):
    """Loads the config from all sources, or exits 2 with one line per problem."""
    from pydantic import ValidationError

    from amago_core.config.errors import describe_validation_error
    from amago_core.config.sources import ConfigSourceError, load_config

    try:
        return load_config(files or (), flags=flags, overrides=overrides or (), base=base)
    except ConfigSourceError as exc:
        fail(str(exc))
    except ValidationError as exc:
        lines = describe_validation_error(exc)
        for line in lines[:-1]:
            sys.stderr.write(f"amago: error: {line}\n")
        fail(lines[-1])


@app.command("show")
def show_command(config: ConfigFiles = None, override: Overrides = None) -> None:
    """Print the config that these sources resolve to (files, AMAGO_* env, -o overrides), as JSON."""
    from amago_core.plugins.errors import PluginError

    loaded = load_or_fail(config, override)
    try:
        loaded = loaded.resolved()
    except (PluginError, ValueError) as exc:
        sys.stderr.write(f"amago: warning: a default component is not installed, shown by name: {exc}\n")
    print_json(loaded.model_dump(mode="json"))
