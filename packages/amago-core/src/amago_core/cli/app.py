"""The ``amago`` command line. Every command imports its heavy pieces inside its body: listing never loads torch."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer

from amago_core.cli import config_cmd, doctor, eval_cmd, listing, run_cmd
from amago_core.cli.help_format import show_flags_without_a_type
from amago_core.cli.version import top_level_options
from amago_core.plugins.groups import cli_names_in_words

show_flags_without_a_type()

app = typer.Typer(
    name="amago",
    help="amago: reinforcement learning with long-term memory, assembled from plugins.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.callback()(top_level_options)  # `amago --version`
app.add_typer(config_cmd.app, name="config")

GroupArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="[GROUP]",
        help=f"{cli_names_in_words()}; every group when left out.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]


@app.command("list")
def list_command(
    group: GroupArgument = None,
    suite: Annotated[str | None, typer.Argument(help="With `envs`: list this suite's tasks.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List installed components with their status (ok / missing / broken / conflict)."""
    listing.list_components(group, suite, as_json)


@app.command("show")
def show_command(
    group: Annotated[str, typer.Argument(metavar="GROUP", help="The component group, e.g. traj-encoders.")],
    name: Annotated[str, typer.Argument(help="The component name (an alias works too).")],
    as_json: JsonOption = False,
) -> None:
    """Show one component: summary, distribution, status and its config fields."""
    listing.show_component(group, name, as_json)


@app.command("plugins")
def plugins_command(as_json: JsonOption = False) -> None:
    """List the distributions that contribute plugins: version, components, status."""
    listing.list_distributions(as_json)


@app.command("doctor")
def doctor_command(
    run_dir: Annotated[
        Path | None,
        typer.Argument(
            metavar="[RUN_DIR]",
            help="A run folder: show its disk use by part instead of checking the install.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Load every plugin, probe optional requirements and import hygiene; exit 1 when something is broken.

    With RUN_DIR: the run folder's disk use by part (checkpoints, buffer, quarantine, metrics, wandb...).
    """
    if run_dir is not None:
        doctor.report_run_dir(run_dir, as_json)
        return
    doctor.run_doctor(as_json)


app.command("run")(run_cmd.with_run_options(run_cmd.run_command, run_cmd.plugin_run_options()))
app.command("eval")(eval_cmd.with_eval_options())


def _add_plugin_commands() -> None:
    from amago_core.hooks.manager import hook_manager

    hook_manager().call_each("amago_cli_commands", app=app)  # in install order; a broken one is left out


# On the app itself, not only in `main()`: `amago_core.cli.app:app` is the whole command, with every plugin's
# commands, wherever it is used (Typer's CliRunner in tests, `python -m amago_core.cli.app`).
_add_plugin_commands()


def _one_line_warning(message: Warning | str, category: type[Warning], *_: object, **__: object) -> str:
    # Python's default shows the source line under the message; on a command line one line says it all.
    return f"amago: warning: {' '.join(str(message).split())} [{category.__name__}]\n"


def main() -> None:
    """Console-script entry point."""
    warnings.formatwarning = _one_line_warning
    app()


if __name__ == "__main__":
    main()
