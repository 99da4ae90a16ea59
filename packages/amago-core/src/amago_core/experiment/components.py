"""Turns what a user passes for a component (a registered name, a table, a config, or a class) into a builder.

AMAGO took types (``tstep_encoder_type=CNNTstepEncoder``); amago also takes registered names and configs, so the
same builder serves scripts, config files and the CLI. A class that a registered spec names (or one derived
from it) is built with that spec's Config; any other class is called with the inferred context alone, as
AMAGO's were.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from amago_core.config.component import ComponentConfig
from amago_core.plugins.groups import ComponentGroup
from amago_core.plugins.registry import registries
from amago_core.plugins.spec import ComponentSpec

ComponentChoice = str | Mapping[str, Any] | ComponentConfig | type | Callable[..., Any]


@dataclass(frozen=True)
class ResolvedComponent:
    """A component choice, resolved.

    Attributes:
        spec: the registered spec, when the choice is registered (or derives from a registered class).
        config: the validated config (None for a plain class).
        cls: the class to call instead of the spec's factory (a user subclass), if any.
    """

    spec: ComponentSpec | None
    config: ComponentConfig | None
    cls: Callable[..., Any] | None = None

    @property
    def name(self) -> str:
        if self.spec is not None:
            return self.spec.name
        return getattr(self.cls, "__qualname__", repr(self.cls))

    def build(self, **context: Any) -> Any:
        """Builds the component with the inferred ``context``."""
        if self.cls is not None:
            return self.cls(self.config, **context) if self.config is not None else self.cls(**context)
        return self.spec.build(self.config, **context)

    def as_choice(self) -> Any:
        """What to hand to a component that builds this one itself (an agent building its encoders)."""
        if self.cls is not None:
            config = self.config
            cls = self.cls
            return (lambda **context: cls(config, **context)) if config is not None else cls
        return self.config

    def describe(self) -> dict[str, Any]:
        """JSON-safe record for ``config.resolved.json``."""
        if self.spec is not None and self.cls is None:
            return self.config.to_dict()
        data: dict[str, Any] = {"class": f"{getattr(self.cls, '__module__', '?')}:{self.name}"}
        if self.config is not None:
            data.update(self.config.to_dict())
        return data


def _spec_for_class(group: ComponentGroup, cls: type) -> ComponentSpec | None:
    """The spec whose factory is ``cls`` or one of its bases (nearest first)."""
    by_factory: dict[str, ComponentSpec] = {}
    for info in registries()[group].describe():
        if info.spec is not None:
            by_factory[info.spec.factory] = info.spec
    for klass in inspect.getmro(cls):
        spec = by_factory.get(f"{klass.__module__}:{klass.__qualname__}")
        if spec is not None:
            return spec
    return None


def resolve_component(
    group: ComponentGroup, choice: ComponentChoice, overrides: Mapping[str, Any] | None = None
) -> ResolvedComponent:
    """Resolves ``choice`` for ``group``; ``overrides`` set config fields the experiment owns (if the config has them).

    Raises:
        amago_core.plugins.PluginError: an unknown or broken registered name.
        pydantic.ValidationError: an invalid table.
        TypeError: something that is neither a name, a table, a config nor a callable.
    """
    overrides = dict(overrides or {})
    if isinstance(choice, str | Mapping | ComponentConfig):
        config = registries()[group].make_config(choice)
        return ResolvedComponent(registries()[group].spec(config.kind), _with_overrides(config, overrides))
    if inspect.isclass(choice):
        spec = _spec_for_class(group, choice)
        if spec is not None:
            config = _with_overrides(spec.make_config(None), overrides)
            is_factory = spec.factory == f"{choice.__module__}:{choice.__qualname__}"
            return ResolvedComponent(spec, config, None if is_factory else choice)
        return ResolvedComponent(None, None, choice)
    if callable(choice):
        return ResolvedComponent(None, None, choice)
    msg = (
        f"cannot use {choice!r} as a {group.label}: pass a registered name (see `amago list {group.cli_kind}`), "
        "a table with kind, a config, or a class."
    )
    raise TypeError(msg)


def _with_overrides(config: ComponentConfig, overrides: dict[str, Any]) -> ComponentConfig:
    applicable = {k: v for k, v in overrides.items() if k in type(config).model_fields and v is not None}
    if not applicable:
        return config
    return type(config).model_validate({**config.model_dump(), **applicable})
