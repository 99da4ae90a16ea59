"""Nothing crosses a private line: a distribution uses only the public names of the others (issue 40, item 5).

Each of the workspace's distributions (amago-core, -nets, -agents, -envs, the ``amago`` meta-package and the
example plugins) could be replaced by a third party's, which sees only what the others make public. So, reading
the source with ``ast`` (never importing it), a module of one distribution may not:

- import a private name (``_x``) or a private module (``pkg._mod``) of another distribution;
- read a private attribute of another distribution's module (``import amago_core.x as m; m._y``);
- read a private attribute that another distribution defines on its objects and this one does not
  (``experiment._accelerator`` from outside amago-core): a private method, class attribute or ``self._x`` field.

Inside a distribution, private names are its own business. Names of libraries that are not ours (torch's
``torch._foreach_lerp_``, optuna's ``trial._trial_id``) are their owners' concern, not this test's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _source_roots() -> dict[str, Path]:
    """Top-level package name -> its folder, for every distribution of the workspace."""
    roots = {"amago": ROOT / "src" / "amago"}
    for parent in (ROOT / "packages", ROOT / "plugins-examples"):
        for package in sorted(parent.glob("*/src/*")):
            if package.is_dir() and (package / "__init__.py").exists():
                roots[package.name] = package
    return roots


PACKAGES = _source_roots()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _modules(package: str) -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGES[package].rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _owner(module: str) -> str | None:
    """The workspace package a dotted module path belongs to (None: not ours)."""
    top = module.split(".")[0]
    return top if top in PACKAGES else None


def _defined_private_attributes(package: str) -> set[str]:
    """Private names a package defines on its objects: methods, class attributes, ``self._x = ...`` fields."""
    names: set[str] = set()
    for _, tree in _modules(package):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private(item.name):
                        names.add(item.name)
                    targets = (
                        item.targets
                        if isinstance(item, ast.Assign)
                        else [item.target]
                        if isinstance(item, ast.AnnAssign)
                        else []
                    )
                    names.update(t.id for t in targets if isinstance(t, ast.Name) and _private(t.id))
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and _private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
    return names


DEFINED = {package: _defined_private_attributes(package) for package in PACKAGES}


@dataclass(frozen=True)
class Crossing:
    """One use of another distribution's private name."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def crossings(package: str) -> list[Crossing]:
    """Every private name of another workspace distribution that ``package`` uses."""
    others_define = {name: other for other, names in DEFINED.items() if other != package for name in names}
    found: list[Crossing] = []
    for path, tree in _modules(package):
        where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        foreign_modules: set[str] = set()  # local names bound to another distribution's modules
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                owner = _owner(node.module)
                if owner is None or owner == package:
                    continue
                if any(_private(part) for part in node.module.split(".")):
                    found.append(Crossing(f"{where}:{node.lineno}", f"imports private module {node.module}"))
                for alias in node.names:
                    if _private(alias.name):
                        found.append(
                            Crossing(f"{where}:{node.lineno}", f"imports {node.module}.{alias.name}")
                        )
                    else:
                        foreign_modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    owner = _owner(alias.name)
                    if owner is None or owner == package:
                        continue
                    if any(_private(part) for part in alias.name.split(".")):
                        found.append(
                            Crossing(f"{where}:{node.lineno}", f"imports private module {alias.name}")
                        )
                    foreign_modules.add(alias.asname or alias.name.split(".")[0])
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            value = node.value
            if isinstance(value, ast.Name) and value.id in ("self", "cls"):
                continue
            base = value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in foreign_modules:
                found.append(
                    Crossing(f"{where}:{node.lineno}", f"reads {ast.unparse(node)} (another package's)")
                )
            elif node.attr in others_define and node.attr not in DEFINED[package]:
                owner = others_define[node.attr]
                found.append(
                    Crossing(f"{where}:{node.lineno}", f"reads {ast.unparse(node)} ({owner}'s private)")
                )
    return found


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_a_distribution_uses_only_the_public_names_of_the_others(package):
    found = crossings(package)
    assert not found, (
        "private names of another distribution (make them public or stop using them):\n"
        + "\n".join(map(str, found))
    )


def test_the_check_sees_a_crossing(tmp_path, monkeypatch):
    """A planted module that reads another distribution's privates, the three ways, is reported three times."""
    planted = tmp_path / "amago_planted"
    planted.mkdir()
    (planted / "__init__.py").write_text("")
    (planted / "use.py").write_text(
        "from amago_core.experiment.hardware import _shown\n"
        "import amago_core.experiment.setup as setup\n"
        "def f(experiment):\n"
        "    setup._record\n"
        "    return experiment._accelerator\n"
    )
    monkeypatch.setitem(PACKAGES, "amago_planted", planted)
    monkeypatch.setitem(DEFINED, "amago_planted", set())
    what = sorted(c.what for c in crossings("amago_planted"))
    assert what == [
        "imports amago_core.experiment.hardware._shown",
        "reads experiment._accelerator (amago_core's private)",
        "reads setup._record (another package's)",
    ]
