"""The config files under ``examples/recipes/`` resolve with the commands their own headers give.

A recipe is a TOML a user passes with ``-c``; its header's ``amago run`` lines are what the README tells them to
type. Each line runs here with ``--dry-run`` from the repository root (where its relative path points), so a recipe
that names a field the config no longer has, or a value it rejects, fails here rather than in a user's shell.
"""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app

REPO = Path(__file__).resolve().parents[2]
RECIPES = sorted((REPO / "examples" / "recipes").glob("*.toml"))


def _header_commands(recipe: Path) -> list[list[str]]:
    """The ``amago run`` lines of a recipe's leading comment, as argv without ``amago``."""
    commands = []
    for line in recipe.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if text.startswith("amago run "):
            commands.append(shlex.split(text)[1:])
    return commands


CASES = [(recipe, argv) for recipe in RECIPES for argv in _header_commands(recipe)]


def test_every_recipe_shows_how_to_use_it():
    assert RECIPES, "examples/recipes/ holds no recipe"
    for recipe in RECIPES:
        commands = _header_commands(recipe)
        assert commands, f"{recipe.name}: its header gives no `amago run` line"
        relative = str(recipe.relative_to(REPO))
        assert all(relative in argv for argv in commands), (
            f"{recipe.name}: a header line does not pass {relative}"
        )
        assert tomllib.loads(recipe.read_text()), f"{recipe.name} is empty"


@pytest.mark.parametrize(("recipe", "argv"), CASES, ids=[f"{r.stem}:{' '.join(a)}" for r, a in CASES])
def test_the_header_command_resolves(recipe, argv, monkeypatch, fresh_registries):
    if any(word.startswith("popgym") for word in argv):
        pytest.importorskip("popgym", reason="the recipe's env needs amago-envs[popgym]")
    monkeypatch.chdir(REPO)
    for name in [k for k in os.environ if k.startswith("AMAGO_")]:
        monkeypatch.delenv(name)
    result = CliRunner().invoke(app, [*argv, "--dry-run"])
    assert result.exit_code == 0, f"{recipe.name}: `amago {' '.join(argv)} --dry-run`:\n{result.output}"
    # Every section the recipe sets reaches the resolved config with the recipe's values (sizing may rescale the
    # schedule, so only the fields it keeps are compared).
    # The config is the JSON object after the sizing line (raw_decode: notes may follow it).
    config, _ = json.JSONDecoder().raw_decode(result.output[result.output.index("{") :])
    for section, fields in tomllib.loads(recipe.read_text()).items():
        for field, value in fields.items():
            if section == "schedule" and field != "train_batches_per_epoch":
                continue
            got = config[section][field]
            assert got == value, (
                f"{recipe.name}: {section}.{field} resolved to {got}, the recipe sets {value}"
            )
