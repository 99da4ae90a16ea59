"""Lazy re-exports (PEP 562) and moved-module aliases, shared by every amago package's ``__init__``.

A package whose ``__init__`` must stay cheap (``amago list`` imports spec modules inside it, and must not pay for
torch or gymnasium) names its public objects here and loads each on first attribute access.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], submodules: Mapping[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """Builds a package's ``__getattr__``, ``__dir__`` and ``__all__`` for lazily imported public names.

    Usage in ``my_pkg/__init__.py``::

        __getattr__, __dir__, __all__ = lazy_exports(__name__, {"Thing": "my_pkg.things"})

    Args:
        package: the package's ``__name__`` (for error messages).
        exports: public name -> module that defines it.
        submodules: attribute name -> module returned whole (``amago.envs`` -> ``amago_envs``).

    Returns:
        ``(__getattr__, __dir__, __all__)`` to assign at the package's module level.
    """
    modules = dict(submodules or {})
    public = sorted({*exports, *modules})

    def __getattr__(name: str) -> Any:
        if name in modules:
            return importlib.import_module(modules[name])
        module_name = exports.get(name)
        if module_name is None:
            msg = f"module {package!r} has no attribute {name!r}; public names: {', '.join(public)}"
            raise AttributeError(msg)
        return getattr(importlib.import_module(module_name), name)

    def __dir__() -> list[str]:
        return sorted({*public, *vars(sys.modules[package])})

    return __getattr__, __dir__, list(public)
