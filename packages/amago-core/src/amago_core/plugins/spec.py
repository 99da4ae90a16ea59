"""``ComponentSpec``: the torch-free description of one pluggable component."""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from amago_core.config.component import ComponentConfig
from amago_core.plugins.errors import BrokenPluginError, InvalidSpecError, MissingRequirementError

PLUGIN_API_VERSION = 1
"""Version of the spec contract. A spec that asks for a newer one is reported as broken."""

_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
_FACTORY_PATTERN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True)
class ComponentSpec:
    """Everything amago needs to list, configure and build a component without importing it.

    An entry point names a spec (``transformer = "amago_nets.specs:TRANSFORMER"``). Loading the spec
    imports pydantic only; the factory module (and torch) is imported by :meth:`build`.

    Attributes:
        name: registered name, lowercase ``[a-z0-9_]`` (``transformer``). Env suites write ``_`` as ``-``
            in env ids.
        group: entry-point group this spec belongs to (``amago.traj_encoders``).
        summary: one line for listings.
        config: the component's ``ComponentConfig`` subclass, with ``kind`` pinned to ``name``.
        factory: ``"package.module:Callable"``, called as ``factory(config, **context)``.
        requires: top-level import names that must be importable (probed, never imported).
        install_hint: the command that installs what ``requires`` names.
        aliases: other names that resolve to this spec; each is also registered as its own entry point.
        api_version: the plugin API version the spec was written against.
    """

    name: str
    group: str
    summary: str
    config: type[ComponentConfig]
    factory: str
    requires: tuple[str, ...] = ()
    install_hint: str | None = None
    aliases: tuple[str, ...] = ()
    api_version: int = PLUGIN_API_VERSION
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Free-form, torch-free metadata for a kind's own use (e.g. an env suite's task list)."""

    def __post_init__(self) -> None:
        where = f"spec {self.name!r} ({self.group})"
        if not _NAME_PATTERN.match(self.name):
            msg = f"{where}: name must be lowercase letters, digits and '_', starting with a letter."
            raise InvalidSpecError(msg)
        if not (isinstance(self.config, type) and issubclass(self.config, ComponentConfig)):
            msg = f"{where}: config must be a subclass of amago_core.config.ComponentConfig."
            raise InvalidSpecError(msg)
        kind = self.config.kind_name()
        if kind != self.name:
            msg = (
                f"{where}: its config {self.config.__name__} pins kind={kind!r}; "
                f'declare `kind: Literal["{self.name}"] = "{self.name}"` in the config.'
            )
            raise InvalidSpecError(msg)
        if not _FACTORY_PATTERN.match(self.factory):
            msg = f"{where}: factory {self.factory!r} must look like 'package.module:Callable'."
            raise InvalidSpecError(msg)
        for alias in self.aliases:
            if not _NAME_PATTERN.match(alias):
                msg = f"{where}: alias {alias!r} must be lowercase letters, digits and '_'."
                raise InvalidSpecError(msg)
        if isinstance(self.requires, str):
            object.__setattr__(self, "requires", (self.requires,))

    def missing_requirements(self) -> list[str]:
        """Import names from ``requires`` that are not importable here (probed without importing them)."""
        missing = []
        for module_name in self.requires:
            top_level = module_name.split(".")[0]
            try:
                found = importlib.util.find_spec(top_level) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.append(module_name)
        return missing

    def requirement_message(self, missing: list[str]) -> str:
        """One line: what is missing for this component and how to install it."""
        hint = self.install_hint or f"install the package that provides {', '.join(missing)}"
        return f"{self.group} {self.name!r} needs {', '.join(missing)}, which is not installed; run: {hint}"

    def make_config(self, config: ComponentConfig | Mapping[str, Any] | None = None) -> ComponentConfig:
        """Validates ``config`` (None → defaults, a mapping → validated, an instance → checked kind)."""
        if config is None:
            return self.config()
        if isinstance(config, ComponentConfig):
            if not isinstance(config, self.config):
                msg = (
                    f"{self.group} {self.name!r} takes a {self.config.__name__}, "
                    f"got a {type(config).__name__} (kind={config.kind!r})."
                )
                raise TypeError(msg)
            return config
        data = dict(config)
        data.setdefault("kind", self.name)
        if data["kind"] in self.aliases:
            data["kind"] = self.name
        return self.config.model_validate(data)

    def load_factory(self) -> Callable[..., Any]:
        """Imports and returns the factory.

        Raises:
            MissingRequirementError: a required module is missing (with the install hint).
            BrokenPluginError: the factory cannot be imported; the original error is chained.
        """
        missing = self.missing_requirements()
        if missing:
            raise MissingRequirementError(self.requirement_message(missing))
        module_name, _, attr_path = self.factory.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
            for attr in attr_path.split("."):
                target = getattr(target, attr)
        except Exception as exc:
            msg = (
                f"{self.group} {self.name!r}: cannot import its factory {self.factory!r} "
                f"({type(exc).__name__}: {exc}). Reinstall or fix the plugin that provides it."
            )
            raise BrokenPluginError(msg) from exc
        if not callable(target):
            msg = f"{self.group} {self.name!r}: factory {self.factory!r} is not callable."
            raise BrokenPluginError(msg)
        return target

    def build(self, config: ComponentConfig | Mapping[str, Any] | None = None, /, **context: Any) -> Any:
        """Builds the component: validates the config, imports the factory, calls ``factory(cfg, **context)``.

        Args:
            config: the component's config, a mapping validated into it, or None for defaults.
            **context: what the builder inferred (spaces, ``max_seq_len``, ``tstep_dim``, ...).

        Raises:
            pydantic.ValidationError: the config is invalid.
            MissingRequirementError: an optional requirement is missing.
            BrokenPluginError: the factory cannot be imported.
        """
        validated = self.make_config(config)
        return self.load_factory()(validated, **context)
