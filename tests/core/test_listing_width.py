"""`amago list` fits an 80-column terminal, and every `--help` shows flags without a value type."""

from __future__ import annotations

from typing import Any

import typer
from typer.testing import CliRunner

from amago_core.cli.app import app

runner = CliRunner()


def test_list_fits_80_columns_one_line_per_component():
    result = runner.invoke(app, ["list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    # One line per component plus a title, header and rule per group (the wide table wrapped into 238 lines).
    assert len(lines) < 90
    assert any(line.startswith("transformer (default)") for line in lines)
    assert any(line.startswith("rnn [gru]") for line in lines)  # aliases stay visible


def test_list_keeps_the_full_table_on_a_wide_terminal():
    result = runner.invoke(app, ["list", "traj-encoders"], env={"COLUMNS": "220"})
    assert result.exit_code == 0, result.output
    assert "distribution" in result.stdout
    assert "amago-nets" in result.stdout


def test_version_is_a_flag_without_a_value_in_help():
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    version_line = next(line for line in result.stdout.splitlines() if "--version" in line)
    assert "<bool>" not in version_line
    shown = runner.invoke(app, ["--version"])
    assert shown.exit_code == 0
    assert shown.stdout.startswith("amago ")


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    if hasattr(command, "commands"):  # a group (Typer vendors its own click)
        for name, sub in command.commands.items():
            paths += _command_paths(sub, (*path, name))
    return paths


def test_no_help_page_shows_a_type_on_a_flag():
    # Typer 0.29 prints `--dry-run <bool>` unless told otherwise; a flag takes no value.
    paths = _command_paths(typer.main.get_command(app))
    assert ("run",) in paths
    assert ("plugin", "new") in paths
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "120"})
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.stdout, path
    run_help = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "120"}).stdout
    seed_line = next(line for line in run_help.splitlines() if "--seed" in line)
    assert "<int>" in seed_line  # options that take a value keep their type
