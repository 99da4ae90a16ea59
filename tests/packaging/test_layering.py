"""Layering: a package imports only packages below it, and declares every distribution it imports.

amago-core sits at the bottom (amago-nets, amago-agents and amago-envs build on it); a back-edge, such as the
experiment loop importing the env package above it, makes `pip install amago-core` give code that fails at
run time. The source is read, not imported, so an import hidden inside a function is caught as well.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = (
    "amago_core",
    "amago_nets",
    "amago_agents",
    "amago_envs",
    "amago_tools",
    "amago_studies",
    "amago_ray",
    "amago_memories",
)
ALLOWED_BELOW = {
    "amago-core": set(),
    "amago-nets": {"amago_core"},
    "amago-agents": {"amago_core", "amago_nets"},
    "amago-envs": {"amago_core"},
    "amago-tools": {"amago_core"},
    "amago-studies": {"amago_core", "amago_tools"},
    "amago-ray": {"amago_core"},
    "amago-wandb": {"amago_core"},
    "amago-memories": {"amago_core"},
}
"""Distribution -> the first-party top-level modules it may import (besides its own)."""

PROVIDED_BY = {
    "pydantic_core": "pydantic",  # pydantic's own compiled core: always comes with it
    "procgen": "procgen-mirror",  # the procgen extra's wheel for cp311 (see amago-envs' pyproject.toml)
    "dm_alchemy": "git-only",  # not on PyPI: the alchemy suite names its git install line instead
}
"""Import names whose distribution is not installed here, or is implied by a declared one."""

MODULE_PATH = re.compile(r"(amago_\w+)(\.[\w.]+)?(:[\w.]+)?")


def _source_files(dist: str) -> list[Path]:
    return sorted((ROOT / "packages" / dist / "src").rglob("*.py"))


def _imported_modules(file: Path) -> list[tuple[int, str]]:
    """Top-level module names the file imports, plus ``amago_*`` module paths named in strings."""
    tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = MODULE_PATH.fullmatch(node.value)  # "amago_envs.pools", "amago_nets.specs:FF" ...
            if match and match.group(1) in FIRST_PARTY:
                found.append((node.lineno, match.group(1)))
    return found


@pytest.mark.parametrize("dist", sorted(ALLOWED_BELOW))
def test_a_package_imports_no_package_above_it(dist: str) -> None:
    own = dist.replace("-", "_")
    allowed = ALLOWED_BELOW[dist] | {own}
    offences = [
        f"{file.relative_to(ROOT)}:{line}: {module}"
        for file in _source_files(dist)
        for line, module in _imported_modules(file)
        if module in FIRST_PARTY and module not in allowed
    ]
    assert not offences, f"{dist} may import only {sorted(allowed)}; found:\n" + "\n".join(offences)


def _declared(dist: str) -> set[str]:
    project = tomllib.loads((ROOT / "packages" / dist / "pyproject.toml").read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    return {re.split(r"[\s\[<>=!~;]", req, maxsplit=1)[0].lower().replace("_", "-") for req in requirements}


@pytest.mark.slow
@pytest.mark.parametrize("dist", sorted(ALLOWED_BELOW))
def test_a_package_declares_every_distribution_it_imports(dist: str) -> None:
    by_module = packages_distributions()
    declared = _declared(dist)
    undeclared = set()
    for file in _source_files(dist):
        for _, module in _imported_modules(file):
            if module in sys.stdlib_module_names or module in FIRST_PARTY or module == "__future__":
                continue
            if PROVIDED_BY.get(module) == "git-only":
                continue
            names = [PROVIDED_BY[module]] if module in PROVIDED_BY else by_module.get(module, [module])
            providers = {name.lower().replace("_", "-") for name in names}
            if not providers & declared:
                undeclared.add(f"{module} (from {', '.join(sorted(providers))})")
    assert not undeclared, (
        f"{dist} imports distributions its pyproject.toml does not declare: {sorted(undeclared)}"
    )


@pytest.mark.parametrize(
    "old_path", ["amago_envs.env", "amago_envs.sequence", "amago_envs.creator", "amago_envs.pools"]
)
def test_the_old_rollout_import_paths_are_gone(old_path: str) -> None:
    # The rollout contract has one home, amago_core.rollout; amago-envs' 0.1 aliases of it were removed unreleased.
    import importlib

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old_path)
