"""Installs a frozen plugin (see README.md) as a distribution for one test."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def frozen_plugin_files(folder: str) -> tuple[str, str, dict[str, dict[str, str]], dict[str, str]]:
    """(distribution name, version, entry points by group, module sources by path) of a frozen plugin."""
    root = HERE / folder
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    modules = {
        str(path.relative_to(root / "src")): path.read_text(encoding="utf-8")
        for path in sorted((root / "src").rglob("*.py"))
    }
    return project["name"], project["version"], project["entry-points"], modules


@pytest.fixture
def install_frozen_plugin(fake_distribution: Callable[..., object]) -> Callable[[str], str]:
    """``install_frozen_plugin("api_v1_extra_style")`` installs that plugin for this test; returns its name."""

    def install(folder: str) -> str:
        name, version, entry_points, modules = frozen_plugin_files(folder)
        fake_distribution(name, version=version, entry_points=entry_points, modules=modules)
        return name

    return install
