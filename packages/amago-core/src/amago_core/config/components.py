"""Each component slot of a run, resolved once: its spec, config, origin, and how to build it.

A slot takes a registered name (one a script registered in-process too), a table, a config or, as AMAGO's
``tstep_encoder_type=CNNTstepEncoder``, a class: one that a registered spec names (or that derives from one) is
built with that spec's config, any other is called with the inferred context alone. Names are looked up in one
explicit :class:`~amago_core.plugins.Registries`; what a component builds itself (an agent's encoders) it is
handed as a ready builder.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from amago_core.config.component import ComponentConfig
from amago_core.config.experiment import ExperimentConfig
from amago_core.plugins.errors import BrokenPluginError, PluginError
from amago_core.plugins.groups import (
    AGENTS,
    EXPLORATIONS,
    RELABELERS,
    TRAJ_ENCODERS,
    TSTEP_ENCODERS,
    ComponentGroup,
)
from amago_core.plugins.in_process import IN_PROCESS_KEY, InProcessSpec
from amago_core.plugins.registry import Registries, Registry
from amago_core.plugins.spec import ComponentSpec

UserClass = type | Callable[..., Any]
"""A component given as Python code (a class or factory) rather than by name."""


class ComponentBuildError(RuntimeError):
    """A component's factory (or class) raised while building it; the cause is chained."""


CLASS_KEY = "class"
"""Key of a slot's record in ``config.resolved.json`` when the run used a Python class (``module:Name``)."""


@dataclass(frozen=True)
class ResolvedComponent:
    """One component slot of a run, resolved.

    Attributes:
        slot: the config slot (``traj_encoder``).
        spec: the registered spec (None for a class that no spec names).
        config: the validated config (None for such a class).
        cls: the class to call instead of the spec's factory (a user subclass or plain class), if any.
        origin: ``distribution==version`` of the spec's entry, ``in-process (module:Class)`` for a component
            this process registered (None for a plain class).
    """

    slot: str
    spec: ComponentSpec | None
    config: ComponentConfig | None
    cls: UserClass | None = None
    origin: str | None = None

    @property
    def name(self) -> str:
        """The registered name, or the class's qualified name."""
        if self.spec is not None:
            return self.spec.name
        return getattr(self.cls, "__qualname__", repr(self.cls))

    def load_factory(self) -> None:
        """Imports the registered factory now (a Python class needs nothing), so a broken plugin fails before a
        run creates anything.

        Raises:
            amago_core.plugins.MissingRequirementError: a required module is missing (with the install hint).
            amago_core.plugins.BrokenPluginError: the factory cannot be imported (names the distribution).
        """
        if self.cls is None and self.spec is not None:
            try:
                self.spec.load_factory()
            except BrokenPluginError as exc:
                raise BrokenPluginError(f"{exc} (from {self.origin or 'an unknown distribution'})") from exc

    def build(self, **context: Any) -> Any:
        """Builds the component with the inferred ``context`` (spaces, ``max_seq_len``, ``tstep_dim``...).

        Raises:
            ComponentBuildError: the factory (or class) raised; the message names the component, its origin and
                the original error, which is chained.
        """
        try:
            if self.cls is not None:
                return self.cls(self.config, **context) if self.config is not None else self.cls(**context)
            if self.spec is None:  # pragma: no cover - resolve() never makes one without either
                msg = f"{self.slot}: nothing to build"
                raise RuntimeError(msg)
            return self.spec.build(self.config, **context)
        except (PluginError, ComponentBuildError):
            raise
        except Exception as exc:
            first_line = (str(exc).strip().splitlines() or [""])[0]
            origin = f" from {self.origin}" if self.origin else ""
            msg = (
                f"{self.slot} {self.name!r}{origin} failed to build: {type(exc).__name__}: {first_line} "
                f"Check the {self.slot} settings, or report it to the plugin's authors."
            )
            raise ComponentBuildError(msg) from exc

    def builder(self) -> Callable[..., Any]:
        """:meth:`build` with nothing bound but this resolution: what a component that builds this one receives."""
        return functools.partial(ResolvedComponent.build, self)

    @property
    def in_process_class(self) -> str | None:
        """``module:Class`` of the class this process registered under the slot's name (None for any other)."""
        return self.spec.factory if isinstance(self.spec, InProcessSpec) and self.cls is None else None

    @property
    def recorded_as_code(self) -> bool:
        """Whether the run's record names Python code for this slot (a class given, or one registered in-process),
        which a config file alone cannot rebuild."""
        return self.cls is not None or self.in_process_class is not None

    def record(self) -> dict[str, Any]:
        """JSON-safe record for ``config.resolved.json``: the config, plus ``class`` when a Python class was
        given, or the registered class's path under ``registered_in_process`` beside the name it was registered
        under."""
        data: dict[str, Any] = {}
        if self.cls is not None:
            data[CLASS_KEY] = (
                f"{getattr(self.cls, '__module__', '?')}:{getattr(self.cls, '__qualname__', '?')}"
            )
        if self.config is not None:
            data.update(self.config.to_dict())
        if self.in_process_class is not None:
            data[IN_PROCESS_KEY] = self.in_process_class
        return data


def _origin(registry: Registry, spec: ComponentSpec) -> str | None:
    if isinstance(spec, InProcessSpec):
        return spec.origin
    records = registry.records(spec.name)
    return f"{records[0].distribution}=={records[0].version}" if records else None


def resolve_component(
    registry: Registry,
    slot: str,
    choice: str | Mapping[str, Any] | ComponentConfig | UserClass,
    options: ComponentConfig | None = None,
) -> ResolvedComponent:
    """Resolves what a user gave for one slot against ``registry``; a subclass of an installed component's class
    takes ``options`` (the config's choice for the slot) when they are that component's, else its defaults.

    Raises:
        amago_core.plugins.PluginError: an unknown, missing or broken registered name.
        pydantic.ValidationError: an invalid table.
        TypeError: something that is neither a name, a table, a config nor a callable.
    """
    if isinstance(choice, str | Mapping | ComponentConfig):
        config = registry.make_config(choice)
        spec = registry.spec(config.kind)
        return ResolvedComponent(slot, spec, config, origin=_origin(registry, spec))
    if inspect.isclass(choice):
        base_spec = registry.spec_for_class(choice)
        if base_spec is not None:
            is_factory = isinstance(base_spec, InProcessSpec) or (
                base_spec.factory == f"{choice.__module__}:{choice.__qualname__}"
            )
            own = options is not None and options.kind == base_spec.name
            return ResolvedComponent(
                slot,
                base_spec,
                options if own else base_spec.make_config(None),
                None if is_factory else choice,
                _origin(registry, base_spec),
            )
        return ResolvedComponent(slot, None, None, choice)
    if callable(choice):
        return ResolvedComponent(slot, None, None, choice)
    group = registry.group
    msg = (
        f"cannot use {choice!r} as a {group.label}: pass a registered name (see `amago list {group.cli_name}`), "
        "a table with kind, a config, or a class."
    )
    raise TypeError(msg)


SLOT_GROUPS: dict[str, ComponentGroup] = {
    group.key: group for group in (TSTEP_ENCODERS, TRAJ_ENCODERS, AGENTS, EXPLORATIONS)
}
"""The top-level component slots a run builds (the env slot is built by the env pools; the relabeler, whose slot
is ``replay.relabeler``, by the dataset)."""

RELABELER_SLOT = RELABELERS.key
"""The relabeler's name among a run's slots (its config path is ``replay.relabeler``)."""


@dataclass(frozen=True)
class RunComponents:
    """The resolved components of one run; each slot resolved once, from one registry."""

    tstep_encoder: ResolvedComponent
    traj_encoder: ResolvedComponent
    agent: ResolvedComponent
    exploration: ResolvedComponent | None
    relabeler: ResolvedComponent | None = None

    @classmethod
    def resolve(
        cls, config: ExperimentConfig, registries: Registries, classes: Mapping[str, UserClass]
    ) -> RunComponents:
        """Resolves every slot: a Python class given for it wins, else the config's choice."""
        resolved = {
            slot: resolve_component(registries[group], slot, choice, getattr(config, slot))
            for slot, group in SLOT_GROUPS.items()
            if (choice := classes.get(slot, getattr(config, slot))) is not None
        }
        relabeler = config.replay.relabeler
        return cls(
            exploration=resolved.pop("exploration", None),
            relabeler=None
            if relabeler is None
            else resolve_component(registries[RELABELERS], RELABELER_SLOT, relabeler),
            **resolved,
        )

    def build_agent(self, **context: Any) -> Any:
        """The agent, built with ``context`` (its spaces, ``max_seq_len``) and builders of the run's encoders."""
        return self.agent.build(
            **context, tstep_encoder=self.tstep_encoder.builder(), traj_encoder=self.traj_encoder.builder()
        )

    def slots(self) -> dict[str, ResolvedComponent]:
        """The resolved slots by name (exploration and relabeler only when a run uses them)."""
        found = {"tstep_encoder": self.tstep_encoder, "traj_encoder": self.traj_encoder, "agent": self.agent}
        if self.exploration is not None:
            found["exploration"] = self.exploration
        if self.relabeler is not None:
            found[RELABELER_SLOT] = self.relabeler
        return found

    def build_relabeler(self, **context: Any) -> Any:
        """The run's relabeler, built with the names of ``context`` its config lists in ``inferred_context``
        (None when the run relabels nothing).

        Raises:
            ComponentBuildError: the factory raised (see :meth:`ResolvedComponent.build`).
        """
        if self.relabeler is None:
            return None
        wanted = getattr(type(self.relabeler.config), "inferred_context", ())
        return self.relabeler.build(**{k: v for k, v in context.items() if k in wanted})

    def load_factories(self) -> None:
        """Imports every slot's factory (see :meth:`ResolvedComponent.load_factory`)."""
        for component in self.slots().values():
            component.load_factory()

    def origins(self) -> dict[str, str]:
        """``slot -> distribution==version`` of every registered component used (for the run's provenance)."""
        return {slot: c.origin for slot, c in self.slots().items() if c.origin is not None}
