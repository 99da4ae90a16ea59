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
    # Every field the recipe sets reaches the resolved config with the recipe's value: sizing keeps what a user
    # set (docs/tutorial/04-launch.md), schedule fields included.
    resolved, _ = json.JSONDecoder().raw_decode(result.output[result.output.index("{") :])
    for path, value in _leaves(tomllib.loads(recipe.read_text())):
        got = resolved
        for key in path:
            got = got[key]
        assert got == value, f"{recipe.name}: {'.'.join(path)} resolved to {got}, the recipe sets {value}"


def _leaves(table: dict, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    """(dotted path, value) of every non-table value in a TOML table."""
    leaves: list[tuple[tuple[str, ...], object]] = []
    for key, value in table.items():
        if isinstance(value, dict):
            leaves += _leaves(value, (*prefix, key))
        else:
            leaves.append(((*prefix, key), value))
    return leaves
