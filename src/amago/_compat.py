"""How the modules of the ``amago`` meta-package keep AMAGO's import paths working.

Each module under ``src/amago`` stands for one of AMAGO's (``amago.nets.traj_encoders``, ``amago.cli_utils``...)
and re-exports amago's counterparts under AMAGO's names. The names load on first use (PEP 562), so importing
any of these modules stays cheap and torch-free. An AMAGO name that amago replaced by something else (a config
field, a command-line option, a plugin) raises :class:`NoCounterpartError`: one line that says what to use
("... is not a name in amago: use -o traj_encoder.attention=sliding_sink"). One of AMAGO's gin configurables that
amago turned into an option (``FlashAttention``, ``ResidualActor``, ``Beta``...) is a *stand-in* instead: the name
imports, so a script can give it as a value (``use_config({"TformerTrajEncoder.attention_type": FlashAttention})``
becomes ``traj_encoder.attention=flash`` through the gin mapping), and only calling it raises the pointer.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

MIGRATION_GUIDE = "docs/migration-from-amago.md"
"""The page that maps AMAGO's concepts onto amago; every pointer names it."""

NO_COUNTERPART: dict[str, dict[str, str]] = {}
"""Module name -> {AMAGO name -> what to use instead in amago}, for every module of this package imported so
far (the compatibility tests read it)."""

STANDINS: dict[str, dict[str, str]] = {}
"""Module name -> {AMAGO name -> what to use instead of calling it}, for the stand-ins of the modules imported so
far: AMAGO's configurables that are values of amago's options (see :func:`standin`)."""


class NoCounterpartError(ImportError):
    """An AMAGO name that amago does not keep; the message says what replaces it.

    An ImportError rather than an AttributeError: for ``from amago.cli_utils import use_config`` Python replaces
    an AttributeError by its own generic message, and the pointer would be lost.
    """


def _load(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


def standin(module_name: str, name: str, hint: str) -> type:
    """A class named like AMAGO's configurable ``module_name.name`` that stands for an amago option.

    Scripts give AMAGO's configurables as gin values (``"TformerTrajEncoder.attention_type": FlashAttention``);
    the gin mapping reads such a value by its name. The stand-in carries that name, and calling it (AMAGO built
    the object itself from the value) raises :class:`NoCounterpartError` with ``hint``.
    """

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        msg = (
            f"{module_name}.{name} stands for an amago option and cannot be built: {hint}; give it as a "
            f"use_config value (the gin mapping reads it), or see {MIGRATION_GUIDE}."
        )
        raise NoCounterpartError(msg, name=module_name)

    doc = f"AMAGO's ``{name}`` as a value for use_config and gin files; in amago: {hint}."
    return type(name, (), {"__init__": __init__, "__module__": module_name, "__doc__": doc})


def shim_exports(
    module_name: str,
    exports: Mapping[str, str],
    *,
    no_counterpart: Mapping[str, str] | None = None,
    submodules: Mapping[str, str] | None = None,
    standins: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """Builds a module's ``__getattr__``, ``__dir__`` and ``__all__`` from AMAGO's names.

    Usage at the top of ``amago/nets/traj_encoders.py``::

        __getattr__, __dir__, __all__ = shim_exports(
            __name__,
            {"TformerTrajEncoder": "amago_nets.traj_transformer:TransformerTrajEncoder"},
            no_counterpart={"GymnaxCompatability": "use the env id gymnax-... instead"},
        )

    Args:
        module_name: the module's ``__name__``.
        exports: AMAGO name -> ``"package.module:attribute"`` of the amago object it stands for.
        no_counterpart: AMAGO name -> what to use instead (one line; the error adds the full name and the guide).
        submodules: attribute -> module returned whole on first access (``"traj_encoders"`` ->
            ``"amago.nets.traj_encoders"``), so that ``amago.nets.traj_encoders.X`` works without an import.
        standins: AMAGO configurable -> what to use instead of calling it: the name gives a :func:`standin`,
            usable as a gin value.

    Returns:
        ``(__getattr__, __dir__, __all__)`` to assign at the module's top level. ``__dir__`` and ``__all__`` list
        the names that work, never the ones without a counterpart.
    """
    targets = {**dict(submodules or {}), **exports}
    pointers = dict(no_counterpart or {})
    NO_COUNTERPART[module_name] = pointers
    stand_ins = {name: standin(module_name, name, hint) for name, hint in (standins or {}).items()}
    STANDINS[module_name] = dict(standins or {})
    public = sorted({*targets, *stand_ins})

    def __getattr__(name: str) -> Any:
        target = targets.get(name)
        if target is not None:
            return _load(target)
        if name in stand_ins:
            return stand_ins[name]
        hint = pointers.get(name)
        if hint is not None:
            msg = f"{module_name}.{name} is not a name in amago: {hint}; see {MIGRATION_GUIDE}."
            raise NoCounterpartError(msg, name=module_name)
        msg = f"module {module_name!r} has no attribute {name!r}; its names: {', '.join(public)}"
        raise AttributeError(msg)

    def __dir__() -> list[str]:
        dunders = (key for key in vars(sys.modules[module_name]) if key.startswith("__"))
        return sorted({*public, *dunders})

    return __getattr__, __dir__, list(public)
