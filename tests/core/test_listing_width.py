"""`amago list` fits an 80-column terminal, and `amago --help` shows `--version` as a flag."""

from __future__ import annotations

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
