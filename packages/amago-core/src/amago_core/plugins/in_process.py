"""Components registered by the running process: a class from a script, usable by name like a plugin.

``@register_traj_encoder("my_gru")`` on a class in a training script registers it here, in a table of the
process that every :class:`~amago_core.plugins.registry.Registry` reads on each lookup, so a registration made
after the registries were scanned is seen at once and survives
:func:`~amago_core.plugins.registry.reset_registries`.

A registered name builds exactly like the class given for its slot (``Experiment(traj_encoder_type=MyGRU)``):
a subclass of an installed component's class gets that component's config and options; any other class (or
function) is called with the run's inferred context alone. A run records the class path next to the name
(:data:`IN_PROCESS_KEY`); reading it back where nothing is registered under the name says which module to
import, and imports nothing itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, PrivateAttr, create_model

from amago_core.plugins.component_config import ComponentConfig
from amago_core.plugins.errors import DuplicateComponentError
from amago_core.plugins.groups import AGENTS, EXPLORATIONS, TRAJ_ENCODERS, TSTEP_ENCODERS, ComponentGroup
from amago_core.plugins.spec import ComponentSpec

IN_PROCESS = "in-process"
"""What listings show where an installed component shows its distribution."""

IN_PROCESS_KEY = "registered_in_process"
"""Key of a component's table in ``config.resolved.json`` that holds the ``module:qualname`` of the class a run
registered in-process under the table's ``kind``. Reading it back checks that this process registered the same
class under that name; the module is never imported from the record (a run folder is data)."""

IN_PROCESS_GROUPS: tuple[ComponentGroup, ...] = (TSTEP_ENCODERS, TRAJ_ENCODERS, AGENTS, EXPLORATIONS)
"""The groups whose components a script may register (AMAGO's four registries). Env suites and relabelers carry
tasks, presets and context that a bare class cannot declare: they are plugins."""


def class_path(target: Any) -> str:
    """``module:qualname`` of a class or function (``train:MyGRU``, ``__main__:main.<locals>.Enc``)."""
    return (
        f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', type(target).__qualname__)}"
    )


class InProcessSpec(ComponentSpec):
    """The spec of a component registered by this process: it holds the class itself, not an import path.

    :attr:`factory` is the class's ``module:qualname`` (shown by listings, recorded by runs); it is never
    imported: :meth:`load_factory` returns a builder around the class this process registered.
    """

    _target: Any = PrivateAttr(default=None)
    _base: ComponentSpec | None = PrivateAttr(default=None)

    @property
    def target(self) -> Any:
        """The registered class (or function)."""
        return self._target

    @property
    def base(self) -> ComponentSpec | None:
        """The installed component whose class the registered class derives from (its config is the base of
        this one's), or None: the class is called with the inferred context alone."""
        return self._base

    @property
    def origin(self) -> str:
        """Where it comes from, for listings and messages: ``in-process (train:MyGRU)``."""
        return f"{IN_PROCESS} ({self.factory})"

    def _factory_problem(self) -> str | None:
        # A class defined inside a function has `<locals>` in its path; the path is shown, never imported.
        return None

    def factory_module_problem(self, provider: str = "the plugin that provides it") -> str | None:
        """Nothing to probe: the class is already in memory."""
        return None

    def load_factory(self) -> Callable[..., Any]:
        """The builder of the registered class (nothing is imported)."""
        return self._build

    def _build(self, config: ComponentConfig, /, **context: Any) -> Any:
        # As `Experiment(<slot>_type=TheClass)` builds it: with the base component's config when the class
        # derives from an installed one, else from the inferred context alone.
        if self._base is None:
            return self._target(**context)
        options = {**config.model_dump(), "kind": self._base.name}
        return self._target(self._base.make_config(options), **context)


def _summary(target: Any, path: str) -> str:
    doc = (getattr(target, "__doc__", None) or "").strip()
    first = doc.splitlines()[0].strip() if doc else ""
    return first or f"{path}, registered in this process"


def _config_class(name: str, path: str, base: ComponentSpec | None) -> type[ComponentConfig]:
    parent = base.config if base is not None else ComponentConfig
    takes = (
        f"the options of {base.group.label} {base.name!r}, whose class it derives from"
        if base is not None
        else "no options: the class is built from the run's inferred context alone"
    )
    kind: Any = Literal[name]  # the name is only known at run time
    return create_model(
        f"InProcess_{name}_Config",
        __base__=parent,
        __doc__=f"Config of {path}, registered in this process as {name!r}; it takes {takes}.",
        __module__=__name__,
        kind=(kind, Field(default=name, description="Registered name (registered in this process).")),
    )


def make_spec(group: ComponentGroup, name: str, target: Any, base: ComponentSpec | None) -> InProcessSpec:
    """The spec of ``target`` registered as ``name`` (a normalised name; ``base`` from the installed registry).

    Raises:
        amago_core.plugins.InvalidSpecError: ``name`` is not lowercase letters, digits and ``_``.
    """
    path = class_path(target)
    spec = InProcessSpec(
        name=name,
        group=group,
        summary=_summary(target, path),
        config=_config_class(name, path, base),
        factory=path,
    )
    spec._target = target
    spec._base = base
    return spec


_lock = threading.Lock()
_table: dict[ComponentGroup, dict[str, InProcessSpec]] = {}


def lookup(group: ComponentGroup, name: str) -> InProcessSpec | None:
    """The component this process registered as ``name`` (a normalised name) in ``group``, if any."""
    with _lock:
        return _table.get(group, {}).get(name)


def specs(group: ComponentGroup) -> dict[str, InProcessSpec]:
    """Every component this process registered in ``group``, by name."""
    with _lock:
        return dict(_table.get(group, {}))


def add(spec: InProcessSpec) -> InProcessSpec:
    """Puts ``spec`` in the table and returns what is registered under its name afterwards.

    The same class registered again is a no-op (the first spec stays). A class with the same ``module:qualname``
    replaces it: a module reloaded, or a notebook cell run again, defines the class anew.

    Raises:
        DuplicateComponentError: another class is registered under the name in this process (both named).
    """
    with _lock:
        group_table = _table.setdefault(spec.group, {})
        held = group_table.get(spec.name)
        if held is not None and held.target is spec.target:
            return held
        if held is not None and held.factory != spec.factory:
            msg = (
                f"cannot register {spec.group.label} {spec.name!r} for {spec.factory}: this process already "
                f"registered {held.factory} under that name; choose another name."
            )
            raise DuplicateComponentError(msg)
        group_table[spec.name] = spec
        return spec


def remove(group: ComponentGroup, name: str) -> bool:
    """Forgets the component registered as ``name`` in ``group``; whether there was one."""
    with _lock:
        return _table.get(group, {}).pop(name, None) is not None
