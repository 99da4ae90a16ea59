"""Layering inside amago-core: a subpackage imports only the subpackages below it, and no module circle.

The layers, lowest first (a module may import its own subpackage and any subpackage of a lower layer):

1. base: the top-level modules (``amago_core/__init__.py``, ``io``, ``lazy``, ``optional``, ``suggest``):
   helpers that know nothing of amago's parts. They import no subpackage.
2. ``plugins``: the plugin API (specs, the ``ComponentConfig`` base, registries, groups); torch-free.
3. ``hooks``: pluggy's 1:N half of the plugin API (log backends, callbacks, the default job). It reads the
   ``amago`` entry points through the plugin registries, and what calls hooks (config, the loop, the CLI) sits
   above it.
4. ``config``: the experiment config tree, its sources, presets and sizing; built on the plugin API.
5. ``data``: trajectories, the disk buffer, datasets, ``Batch``.
6. ``rollout``: the env contract (``AMAGOEnv``, pools). It builds timesteps from ``data``, so it sits above it
   (the architecture's "data / rollout" layer, split because rollout imports data and not the reverse).
7. ``experiment``: the loop, which assembles everything below.
8. ``testing``: the conformance kit plugin authors run (``check_component``, the pytest fixtures). It may use
   every layer to check a component; the library itself never imports its own test kit.
9. ``cli``: the ``amago`` command, the top: it may use everything, nothing imports it.

An edge is what the package test (``test_layering.py``) counts, for the same reason: every ``import``, wherever
it sits (an import inside a function is deferred, not avoided, so it is still a dependency, and one under
``TYPE_CHECKING`` still ties the module to that layer's types), and every string that is exactly a module path
(``"amago_core.testing.nets_checks:check_traj_encoder"``), which is imported by name later. The source is read
with ``ast``, never imported.

Circles are looked for between the modules of one subpackage (between subpackages, the order above already
rules them out: a circle needs an upward edge). There only imports count, lazy ones included (deferring an import hides a
circle, it does not remove it); a module path in a string does not, since it is imported by someone else later
(an entry point, a child process), never by the module that names it: `amago doctor` names ``cli.app`` to probe
its import hygiene in a child process, while ``cli.app`` imports the doctor. Importing a submodule does not count
as importing its package's ``__init__``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "packages" / "amago-core" / "src"
PACKAGE = SRC / "amago_core"
BASE = "base"
"""The layer name of the top-level modules."""

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({BASE}),
    frozenset({"plugins"}),
    frozenset({"hooks"}),
    frozenset({"config"}),
    frozenset({"data"}),
    frozenset({"rollout"}),
    frozenset({"experiment"}),
    frozenset({"testing"}),
    frozenset({"cli"}),
)
"""amago-core's layers, lowest first; subpackages in one layer are siblings that may not import each other."""

MODULE_PATH = re.compile(r"amago_core(\.[\w.]+)?(:[\w.]+)?")


def _module_name(file: Path) -> str:
    parts = list(file.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(file): file for file in sorted(PACKAGE.rglob("*.py"))}
"""Every module of amago_core, by dotted name."""


def _subpackage_of(module: str) -> str:
    """``amago_core.config.sources`` -> ``config``; a top-level module (or the package itself) -> base."""
    parts = module.split(".")
    if len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
        return parts[1]
    return BASE


def _rank(subpackage: str) -> int:
    return next(i for i, members in enumerate(LAYERS) if subpackage in members)


def _known_module(dotted: str) -> str | None:
    """The longest prefix of ``dotted`` that is a module of amago_core (``pkg.mod.Name`` -> ``pkg.mod``)."""
    while dotted:
        if dotted in MODULES:
            return dotted
        dotted = dotted.rpartition(".")[0]
    return None


def _imports(module: str) -> Iterator[tuple[int, str, bool]]:
    """``(line, amago_core module, by a string)`` for each import of the module, wherever it sits, and each string
    that is a module path."""
    file = MODULES[module]
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), filename=str(file))):
        names: list[str] = []
        by_string = False
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this module's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports the module pkg.mod; `from mod import Name` imports mod.
            names = [f"{base}.{alias.name}" for alias in node.names]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and MODULE_PATH.fullmatch(node.value)
        ):
            names, by_string = [node.value.partition(":")[0]], True
        for name in names:
            target = _known_module(name) if name.split(".")[0] == "amago_core" else None
            if target is not None and target != module:
                yield node.lineno, target, by_string


EDGES = [
    (module, line, target, by_string) for module in MODULES for line, target, by_string in _imports(module)
]
"""Every (module, line, amago_core module it imports or names, whether by a string) of amago_core."""


def _layer_edges() -> dict[tuple[str, str], list[str]]:
    """(importing subpackage, imported one) -> ``file:line: module`` of each import between two subpackages."""
    found: dict[tuple[str, str], list[str]] = {}
    for module, line, target, _ in EDGES:
        pair = (_subpackage_of(module), _subpackage_of(target))
        if pair[0] != pair[1]:
            where = f"{MODULES[module].relative_to(ROOT)}:{line}: {target}"
            found.setdefault(pair, []).append(where)
    return found


def test_every_subpackage_has_a_layer() -> None:
    found = {_subpackage_of(module) for module in MODULES}
    placed = set().union(*LAYERS)
    assert found <= placed, f"place {sorted(found - placed)} in LAYERS (and say why in the docstring)"
    assert placed <= found, f"LAYERS names subpackages that do not exist: {sorted(placed - found)}"


def test_a_subpackage_imports_only_the_layers_below_it() -> None:
    offences = [
        f"{low} may not import {high}:\n  " + "\n  ".join(wheres)
        for (low, high), wheres in sorted(_layer_edges().items())
        if _rank(high) >= _rank(low)
    ]
    order = " -> ".join(" | ".join(sorted(layer)) for layer in LAYERS)
    assert not offences, f"amago-core's layers, lowest first: {order}; found:\n" + "\n".join(offences)


def _import_graph(subpackage: str) -> dict[str, set[str]]:
    """Module -> the modules of the same subpackage it imports (strings naming a module left out)."""
    graph: dict[str, set[str]] = {module: set() for module in MODULES if _subpackage_of(module) == subpackage}
    for module, _, target, by_string in EDGES:
        if module in graph and target in graph and not by_string:
            graph[module].add(target)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


SUBPACKAGES = sorted(set().union(*LAYERS))


@pytest.mark.parametrize("subpackage", SUBPACKAGES)
def test_the_modules_of_a_subpackage_import_each_other_in_no_circle(subpackage: str) -> None:
    graph = _import_graph(subpackage)
    circles = _circles(graph)
    arrows = [f"{module} -> {sorted(graph[module] & set(circle))}" for circle in circles for module in circle]
    assert not circles, (
        f"modules of {subpackage} import each other in a circle; move what both need into the lower one, or into "
        "a module of its own:\n  " + "\n  ".join(arrows)
    )
