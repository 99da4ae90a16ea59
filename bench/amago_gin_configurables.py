"""Lists every gin configurable of the installed AMAGO, with the parameters of each, as JSON.

Run with the interpreter of the AMAGO reference venv (``../shared/baselines/amago-3.3.0/setup.sh``), as a
separate program (nothing of the project imports AMAGO), from the repository root::

    .venv-amago-ref/bin/python bench/amago_gin_configurables.py > tests/compat/fixtures/amago-3.3.0-gin-configurables.json

``tests/compat/test_gin_mapping.py`` compares amago's gin mapping (``amago.from_amago.gin``) with that
file, so the mapping covers every configurable and parameter of this AMAGO version.

How the list is made: AMAGO's source files are read with ``ast``, so a module whose optional dependencies are
missing here (the Atari wrapper without ``ale_py``) still counts. Each module-level class or function decorated
with ``gin.configurable`` (bare or called, with its ``denylist``) is recorded with the parameters of what gin
wraps: a function's own, a class's ``__init__`` (inherited from a base in the same file when the class has
none; generated from the fields of a dataclass). Every module that does import is then checked against gin's
own registry, names and parameters alike, and the program stops on any difference, so the source reading
cannot silently miss one. AMAGO v3.3.0 calls ``gin.external_configurable`` nowhere; the program stops if a
version does, since such a configurable would need recording too. It also lists AMAGO's ``register_*``
functions (its shortcut-name registries), which the mapping covers as well.

Each parameter is ``{"name", "default", "bindable"}``: ``default`` is the default's source text (null: none,
the caller passes it), ``bindable`` is false for a name in the decorator's ``denylist`` (gin refuses to bind it).
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import json
import sys
import warnings
from pathlib import Path
from typing import Any


def _gin_decorator(decorator: ast.expr) -> tuple[bool, list[str]]:
    """Whether ``decorator`` is ``gin.configurable`` (bare or called), and the names its ``denylist`` holds."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    is_gin = (
        isinstance(target, ast.Attribute)
        and target.attr == "configurable"
        and isinstance(target.value, ast.Name)
        and target.value.id == "gin"
    )
    denied: list[str] = []
    if is_gin and isinstance(decorator, ast.Call):
        for keyword in decorator.keywords:
            if keyword.arg == "denylist":
                denied = list(ast.literal_eval(keyword.value))
    return is_gin, denied


def _parameter(name: str, default: ast.expr | None) -> dict[str, Any]:
    return {"name": name, "default": None if default is None else ast.unparse(default)}


def _function_parameters(function: ast.FunctionDef, *, is_method: bool) -> list[dict[str, Any]]:
    args = function.args
    positional = [*args.posonlyargs, *args.args][1 if is_method else 0 :]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    params = [_parameter(arg.arg, default) for arg, default in zip(positional, defaults, strict=True)]
    params += [
        _parameter(arg.arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    return params


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for decorator in cls.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
        if name == "dataclass":
            return True
    return False


def _dataclass_parameters(cls: ast.ClassDef) -> list[dict[str, Any]]:
    """The ``__init__`` parameters a dataclass generates: its annotated fields, less ``ClassVar`` and
    ``field(init=False)`` ones."""
    params = []
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        if "ClassVar" in ast.unparse(node.annotation):
            continue
        default = node.value
        if isinstance(default, ast.Call) and ast.unparse(default.func).split(".")[-1] == "field":
            options = {keyword.arg: keyword.value for keyword in default.keywords}
            if "init" in options and ast.literal_eval(options["init"]) is False:
                continue
            default = options.get("default") or options.get("default_factory")
        params.append(_parameter(node.target.id, default))
    return params


def _class_parameters(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[dict[str, Any]]:
    """The parameters of the ``__init__`` gin wraps: the class's own, else the nearest base's in this file."""
    current = cls
    while True:
        for node in current.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                return _function_parameters(node, is_method=True)
        if _is_dataclass(current):
            return _dataclass_parameters(current)
        bases = [base.id for base in current.bases if isinstance(base, ast.Name) and base.id in classes]
        if not bases:
            return []
        current = classes[bases[0]]


def _modules(root: Path) -> list[tuple[str, ast.Module]]:
    """``(dotted module name, parsed source)`` of every file of the package under ``root``."""
    modules = []
    for path in sorted(root.rglob("*.py")):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        modules.append((name, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))))
    return modules


def from_source(root: Path) -> dict[str, dict[str, Any]]:
    """Every configurable in the package's source, keyed by its dotted path."""
    found: dict[str, dict[str, Any]] = {}
    for module, tree in _modules(root):
        classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
        for node in tree.body:
            if not isinstance(node, ast.ClassDef | ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                is_gin, denied = _gin_decorator(decorator)
                if not is_gin:
                    continue
                if isinstance(node, ast.ClassDef):
                    kind, params = "class", _class_parameters(node, classes)
                else:
                    kind, params = "function", _function_parameters(node, is_method=False)
                for param in params:
                    param["bindable"] = param["name"] not in denied
                found[f"{module}.{node.name}"] = {"kind": kind, "module": module, "parameters": params}
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("external_configurable"):
                raise SystemExit(
                    f"{module}: {ast.unparse(call)} is not recorded yet; teach this program about it"
                )
    return found


def registrations(root: Path) -> list[str]:
    """AMAGO's shortcut-name registries: the dotted paths of its module-level ``register_*`` functions."""
    return [
        f"{module}.{node.name}"
        for module, tree in _modules(root)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("register_")
    ]


def check_against_gin(found: dict[str, dict[str, Any]]) -> list[str]:
    """Compares ``found`` with gin's registry for every module that imports; returns the ones that do not."""
    import gin.config

    unimported = []
    for module in sorted({entry["module"] for entry in found.values()}):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(module)
        except Exception:  # an optional dependency of that module is missing here; the source reading stands
            unimported.append(module)
    registered = {
        name: selectable
        for name, selectable in gin.config._REGISTRY.items()
        if name.startswith("amago.") and selectable.module not in unimported
    }
    expected = {name for name, entry in found.items() if entry["module"] not in unimported}
    if set(registered) != expected:
        raise SystemExit(
            f"gin's registry and the source reading disagree on {sorted(set(registered) ^ expected)}"
        )
    for name, selectable in registered.items():
        wrapped = selectable.wrapped
        target = wrapped.__init__ if inspect.isclass(wrapped) else wrapped
        signature = inspect.signature(inspect.unwrap(target))
        names = [
            p.name
            for p in signature.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"
        ]
        recorded = [param["name"] for param in found[name]["parameters"]]
        if names != recorded:
            raise SystemExit(f"{name}: gin's signature has {names}, the source reading found {recorded}")
        denied = set(selectable.denylist or ())
        if denied != {param["name"] for param in found[name]["parameters"] if not param["bindable"]}:
            raise SystemExit(f"{name}: gin's denylist {sorted(denied)} differs from the source reading")
    return unimported


def main() -> None:
    import amago

    root = Path(amago.__file__).resolve().parent
    found = from_source(root)
    unimported = check_against_gin(found)
    record = {
        "amago_version": importlib.metadata.version("amago"),
        "made_by": "bench/amago_gin_configurables.py",
        "not_imported_here": unimported,
        "registrations": registrations(root),
        "configurables": [
            {
                "name": path.rsplit(".", 1)[-1],
                "path": path,
                "kind": entry["kind"],
                "parameters": entry["parameters"],
            }
            for path, entry in sorted(found.items())
        ],
    }
    sys.stdout.write(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
