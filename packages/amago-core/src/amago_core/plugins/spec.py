"""``ComponentSpec``: the torch-free description of one pluggable component.

Every piece of data amago reads from a spec is a typed, documented field here, validated when the spec module
is imported (a misspelt field fails with a did-you-mean, like configs do). Fields that only make sense for one
group (an env suite's tasks, a timestep encoder's example observation) are refused on specs of other groups.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from amago_core.config.component import ComponentConfig
from amago_core.config.strict import StrictModel
from amago_core.plugins.errors import BrokenPluginError, InvalidSpecError, MissingRequirementError

PLUGIN_API_VERSION = 1
"""Version of the spec contract. A spec that asks for a newer one is reported as broken."""

ENV_SUITES_GROUP = "amago.env_suites"
TSTEP_ENCODERS_GROUP = "amago.tstep_encoders"
ANY_TASK = "*"
"""Key of an env suite's preset that applies to every task without a preset of its own."""

_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
_FACTORY_PATTERN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class ExampleArray(StrictModel):
    """One key of a timestep encoder's example observation (what its conformance check builds it with)."""

    shape: tuple[int, ...]
    """Shape of one observation of this key, without batch or time dims (``[36, 36, 3]``)."""
    dtype: Literal["uint8", "float32"] = "float32"
    """Element type: ``uint8`` images are sampled in 0..255, ``float32`` arrays in -1..1."""


class ComponentSpec(StrictModel):
    """Everything amago needs to list, configure and build a component without importing it.

    An entry point names a spec (``transformer = "amago_nets.specs:TRANSFORMER"``). Loading the spec imports
    pydantic only; the factory module (and torch) is imported by :meth:`build`. Construct it with keywords.
    """

    name: str
    """Registered name, lowercase ``[a-z0-9_]`` (``transformer``). Env suites write ``_`` as ``-`` in env ids."""
    group: str
    """Entry-point group the spec belongs to (``amago.traj_encoders``)."""
    summary: str
    """One line for listings."""
    config: type[ComponentConfig]
    """The component's ``ComponentConfig`` subclass, with ``kind`` pinned to ``name``."""
    factory: str
    """``"package.module:Callable"``, called as ``factory(config, **inferred_context)``."""
    requires: tuple[str, ...] = ()
    """Top-level import names that must be importable (probed with ``importlib.util.find_spec``, never imported)."""
    install_hint: str | None = None
    """The command that installs what ``requires`` names (``pip install "amago-envs[popgym]"``)."""
    aliases: tuple[str, ...] = ()
    """Other names that resolve to this spec; register each as an entry point of its own too."""
    api_version: int = PLUGIN_API_VERSION
    """The plugin API version the spec was written against."""
    group_default: bool = False
    """This component fills its slot when a run names none of its group (amago-nets marks ``ff`` and
    ``transformer``). Two installed defaults for one group are an error that names both."""
    cuda_kernels: Mapping[str, str] = Field(default_factory=dict)
    """Optional CUDA kernel packages the component uses when present: import name -> install command
    (``{"flash_attn": 'pip install "amago-nets[flash]"'}``). `amago show` and `amago doctor` report them."""
    tasks: tuple[str, ...] = ()
    """Env suites only: the tasks an env id may name after the suite (``tmaze-passive``). Empty for suites whose
    id is the suite name alone or that accept open-ended tasks (any gymnasium id). Listed without an import."""
    default_task: str | None = None
    """Env suites only: the task used when the env id names none (one of ``tasks``)."""
    presets: Mapping[str, Mapping[str, Any]] = Field(default_factory=dict)
    """Env suites only: config tables (like a ``-c`` file) applied under every user setting when a run picks the
    suite; key ``"*"`` for every task, or a task name for that task (merged over ``"*"``)."""
    example_obs: Mapping[str, ExampleArray] = Field(default_factory=dict)
    """Timestep encoders only: the observation keys the conformance check builds the encoder with, when it
    needs more than one flat float vector (``{"image": {"shape": [36, 36, 3], "dtype": "uint8"}}``)."""

    @model_validator(mode="before")
    @classmethod
    def _refuse_free_form_extra(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "extra" in data:
            msg = (
                f"spec {data.get('name')!r}: ComponentSpec(extra=...) was replaced by typed fields; move its keys "
                "to tasks=, default_task=, presets=, cuda_kernels= or example_obs= (see the plugin guide)."
            )
            raise InvalidSpecError(msg)
        return data

    @field_validator("requires", "aliases", mode="before")
    @classmethod
    def _one_name_is_a_tuple(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check_consistency(self) -> ComponentSpec:
        where = f"spec {self.name!r} ({self.group})"
        problems = []
        if not _NAME_PATTERN.match(self.name):
            problems.append("name must be lowercase letters, digits and '_', starting with a letter")
        kind = self.config.kind_name()
        if kind != self.name:
            problems.append(
                f"its config {self.config.__name__} pins kind={kind!r}; "
                f'declare `kind: Literal["{self.name}"] = "{self.name}"` in the config'
            )
        if not _FACTORY_PATTERN.match(self.factory):
            problems.append(f"factory {self.factory!r} must look like 'package.module:Callable'")
        problems.extend(
            f"alias {alias!r} must be lowercase letters, digits and '_'"
            for alias in self.aliases
            if not _NAME_PATTERN.match(alias)
        )
        problems.extend(self._group_field_problems())
        if problems:
            raise InvalidSpecError(f"{where}: " + "; ".join(problems) + ".")
        return self

    def _group_field_problems(self) -> list[str]:
        problems: list[str] = []
        suite_fields = {"tasks": self.tasks, "default_task": self.default_task, "presets": self.presets}
        if self.group != ENV_SUITES_GROUP:
            problems.extend(
                f"{field} is for env suites ({ENV_SUITES_GROUP}) only"
                for field, v in suite_fields.items()
                if v
            )
        elif self.group_default:
            problems.append(
                "an env suite cannot be a group default (a run without an env uses the default job)"
            )
        if self.example_obs and self.group != TSTEP_ENCODERS_GROUP:
            problems.append(f"example_obs is for timestep encoders ({TSTEP_ENCODERS_GROUP}) only")
        if self.default_task is not None and self.tasks and self.default_task not in self.tasks:
            problems.append(f"default_task {self.default_task!r} is not one of tasks {list(self.tasks)}")
        if self.tasks:
            from amago_core.suggest import did_you_mean

            problems.extend(
                f"preset {key!r} names no task.{did_you_mean(key, self.tasks)} Use '*' or one of {list(self.tasks)}"
                for key in self.presets
                if key != ANY_TASK and key not in self.tasks
            )
        return problems

    # ---- requirements -------------------------------------------------------------------------------
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

    # ---- env suites ---------------------------------------------------------------------------------
    def preset_for(self, task: str | None) -> dict[str, Any]:
        """An env suite's preset for ``task`` (None: the default task): ``"*"`` with the task's own merged over it.

        Raises:
            InvalidSpecError: a preset is not a table of config sections.
        """
        from amago_core.config.sources import deep_merge

        chosen = task if task is not None else self.default_task
        layers = [self.presets.get(ANY_TASK, {}), self.presets.get(chosen, {}) if chosen else {}]
        merged: dict[str, Any] = {}
        for layer in layers:
            if not isinstance(layer, Mapping):
                msg = f"env suite {self.name!r}: its preset for {chosen or ANY_TASK!r} is not a config table."
                raise InvalidSpecError(msg)
            merged = deep_merge(merged, layer)
        return merged

    # ---- building -----------------------------------------------------------------------------------
    def make_config(self, config: ComponentConfig | Mapping[str, Any] | None = None) -> ComponentConfig:
        """Validates ``config`` (None → defaults, a mapping → validated, an instance → checked kind)."""
        if config is None:
            # Same as ``self.config()``: a registered config pins ``kind`` with a default (checked when the
            # spec is built), which the type checker cannot see on the ``ComponentConfig`` base.
            return self.config.model_validate({})
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
