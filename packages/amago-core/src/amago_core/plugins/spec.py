"""``ComponentSpec``: the torch-free description of one pluggable component.

Every piece of data amago reads from a spec is a typed, documented field, validated when the spec module is
imported (a misspelt field fails with a did-you-mean, like configs do); fields that only make sense for one
group (an env suite's tasks) are refused on specs of other groups. The first API's free-form ``extra={...}`` is
still mapped onto the typed fields, with one ``DeprecationWarning``, until :data:`EXTRA_REMOVED_IN` (policy: the
plugin guide, docs/tutorial/08-write-a-plugin.md). While the registry loads an entry point, a spec that fails
validation becomes a :class:`BrokenSpec` instead of raising, so the other specs of its module still load.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import importlib.util
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

# pydantic exports no public name for its model metaclass; ComponentSpec's must derive from it.
from pydantic._internal._model_construction import ModelMetaclass
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from amago_core.plugins.component_config import ComponentConfig
from amago_core.plugins.errors import (
    BrokenPluginError,
    InvalidSpecError,
    MissingRequirementError,
    PluginError,
)
from amago_core.plugins.groups import ComponentGroup, group_of_spec
from amago_core.plugins.strict import StrictModel, describe_validation_error
from amago_core.plugins.tables import deep_merge
from amago_core.suggest import did_you_mean

PLUGIN_API_VERSION = 1
"""Version of the spec contract (the plugin API's major version). amago-core loads every spec written for this
version or an older one still inside its deprecation window; a spec that asks for a newer one is reported as
broken. It goes up only when a deprecated form is removed (see the plugin guide's compatibility policy)."""

EXTRA_REMOVED_IN = "amago-core 0.3"
"""The release that stops accepting ``ComponentSpec(extra=...)`` (deprecated in amago-core 0.1, plugin API 1)."""

LEGACY_EXTRA_KEYS = ("tasks", "default_task", "presets", "cuda_kernels", "example_obs")
"""The keys amago read from the first API's free-form ``extra`` mapping; each is now the typed field of that name."""

_deferring_errors: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "amago_spec_deferring_errors", default=False
)

ANY_TASK = "*"
"""Key of an env suite's preset that applies to every task without a preset of its own."""

_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
_FACTORY_PATTERN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def _importable(module_name: str) -> bool:
    """Whether ``module_name`` can be imported here (probed with ``find_spec``, not imported)."""
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        return False


def _import_attr(path: str) -> Any:
    """Imports ``"package.module:attr.path"`` and returns what it names."""
    module_name, _, attr_path = path.partition(":")
    target: Any = importlib.import_module(module_name)
    for attr in attr_path.split("."):
        target = getattr(target, attr)
    return target


class ExampleArray(StrictModel):
    """One key of a timestep encoder's example observation (what its conformance check builds it with)."""

    shape: tuple[int, ...]
    """Shape of one observation of this key, without batch or time dims (``[36, 36, 3]``)."""
    dtype: Literal["uint8", "float32"] = "float32"
    """Element type: ``uint8`` images are sampled in 0..255, ``float32`` arrays in -1..1."""


class OwnEnvironment(StrictModel):
    """How to run a component whose requirements cannot be installed next to the other components'.

    procgen-mirror needs numpy<2, which no environment with the other suites can have: its install line there
    would downgrade numpy under all of them. `amago doctor` names the way to an environment of its own instead.
    """

    needs: str
    """What the component needs that the other components' environment cannot give (``numpy<2``)."""
    how: str
    """How to build the environment of its own: the commands, written as a clause of a sentence."""
    clash: str | None = None
    """``"package.module:callable"`` returning what in this environment rules the component out (``"numpy
    2.4.6"``), or None when this environment can hold it after all (then its install line still applies). Called
    by `amago doctor` only; it must import no torch."""

    @field_validator("clash")
    @classmethod
    def _looks_like_a_callable(cls, value: str | None) -> str | None:
        if value is not None and not _FACTORY_PATTERN.match(value):
            msg = f"clash {value!r} must look like 'package.module:callable'"
            raise ValueError(msg)
        return value

    def what_clashes_here(self) -> str | None:
        """Calls :attr:`clash`: what in this environment rules the component out, or None.

        Raises:
            BrokenPluginError: the callable cannot be imported or raises; the cause is chained.
        """
        if self.clash is None:
            return None
        try:
            found = _import_attr(self.clash)()
        except Exception as exc:
            msg = f"its own_environment.clash {self.clash!r} failed ({type(exc).__name__}: {exc})"
            raise BrokenPluginError(msg) from exc
        return None if found is None else str(found)

    def advice(self, name: str) -> tuple[str, bool]:
        """One sentence on component ``name``'s own environment, and whether this environment rules it out.

        Raises:
            BrokenPluginError: :attr:`clash` cannot be called.
        """
        clash = self.what_clashes_here()
        here = f" and this environment has {clash}" if clash else ""
        advice = f"{name} needs {self.needs}{here}, so it gets an environment of its own: {self.how}"
        return advice, bool(clash)


class BrokenSpec:
    """What ``ComponentSpec(...)`` returns instead of raising while the registry loads an entry point.

    A plugin module defines several specs at import; if one of them raised, the import would fail and every
    entry point of that module would be broken. Inside :func:`defer_spec_errors` an invalid spec becomes this
    placeholder: the registry marks that one entry broken with :attr:`problem`, and any other use of it raises.
    """

    def __init__(self, name: object, group: object, problem: str):
        self.name = name
        self.group = group
        self.problem = problem

    def __getattr__(self, attr: str) -> Any:
        raise InvalidSpecError(self.problem)

    def __repr__(self) -> str:
        return f"BrokenSpec(name={self.name!r}, problem={self.problem!r})"


@contextlib.contextmanager
def defer_spec_errors() -> Iterator[None]:
    """While inside, an invalid ``ComponentSpec(...)`` returns a :class:`BrokenSpec` instead of raising.

    The registry wraps each entry point's import in it, so that one invalid spec marks only itself broken.
    """
    token = _deferring_errors.set(True)
    try:
        yield
    finally:
        _deferring_errors.reset(token)


def _problem_text(spec_name: object, exc: Exception) -> str:
    """One line for a spec that failed validation: pydantic's problems joined, or the InvalidSpecError's text."""
    if isinstance(exc, ValidationError):
        lines = describe_validation_error(exc, source=f"spec {spec_name!r}")
        return "; ".join(lines) + "."
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


if TYPE_CHECKING:
    # Type checkers see pydantic's own metaclass, so ``ComponentSpec(...)`` keeps its checked keywords and
    # its type; the BrokenSpec it may return exists only while the registry loads an entry point.
    _SpecMeta = ModelMetaclass
else:

    class _SpecMeta(ModelMetaclass):
        """Lets ``ComponentSpec(...)`` hand back a :class:`BrokenSpec` inside :func:`defer_spec_errors`."""

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().__call__(*args, **kwargs)
            except (ValidationError, PluginError) as exc:
                if not _deferring_errors.get():
                    raise
                return BrokenSpec(
                    kwargs.get("name"), kwargs.get("group"), _problem_text(kwargs.get("name"), exc)
                )


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the line that called ``ComponentSpec(...)``."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if not (module == __name__ or module.startswith("pydantic")):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _map_legacy_extra(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Moves the first API's ``extra={...}`` keys onto the typed fields; returns (new data, the old extra).

    Raises:
        InvalidSpecError: ``extra`` is not a mapping, or a key is given both in ``extra`` and as a field.
    """
    name = data.get("name")
    extra = data.pop("extra")
    extra = {} if extra is None else extra
    if not isinstance(extra, Mapping):
        msg = (
            f"spec {name!r}: extra= must be a mapping, got {type(extra).__name__}; better, move its keys to "
            f"the typed fields {', '.join(f'{k}=' for k in LEGACY_EXTRA_KEYS)} (see the plugin guide)."
        )
        raise InvalidSpecError(msg)
    for key in LEGACY_EXTRA_KEYS:
        if key not in extra:
            continue
        if key in data:
            msg = f"spec {name!r}: {key} is given both as {key}= and in extra=; keep {key}= and drop it from extra."
            raise InvalidSpecError(msg)
        value = extra[key]
        if value is None and key != "default_task":
            continue  # the old specs wrote None for "none"; the typed fields say it with their defaults
        data[key] = tuple(value) if key == "tasks" and not isinstance(value, str) else value
    return data, dict(extra)


def _legacy_extra_warning(name: object, extra: Mapping[str, Any]) -> str:
    moved = [key for key in LEGACY_EXTRA_KEYS if key in extra]
    unknown = sorted(str(key) for key in extra if key not in LEGACY_EXTRA_KEYS)
    fields = ", ".join(f"{key}=" for key in (moved or LEGACY_EXTRA_KEYS))
    message = (
        f"spec {name!r}: ComponentSpec(extra=...) is deprecated and is removed in {EXTRA_REMOVED_IN}; "
        f"pass {fields} as keyword arguments instead (see the plugin guide)."
    )
    if unknown:
        message += (
            f" amago reads none of its other keys ({', '.join(repr(k) for k in unknown)}); they stay readable "
            f"as spec.extra until {EXTRA_REMOVED_IN}: keep them in your own module instead."
        )
    return message


class ComponentSpec(StrictModel, metaclass=_SpecMeta):
    """Everything amago needs to list, configure and build a component without importing it.

    An entry point names a spec (``transformer = "amago_nets.specs:TRANSFORMER"``). Loading the spec imports
    pydantic only; the factory module (and torch) is imported by :meth:`build`. Construct it with keywords.
    """

    name: str
    """Registered name, lowercase ``[a-z0-9_]`` (``transformer``). Env suites write ``_`` as ``-`` in env ids."""
    group: ComponentGroup
    """The group the spec belongs to (``ComponentGroup.TRAJ_ENCODERS``); its entry-point group as a string
    (``"amago.traj_encoders"``) is accepted too."""
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
    own_environment: OwnEnvironment | None = None
    """Set when the component's requirements cannot be installed next to the other components' (procgen's
    numpy<2): `amago doctor` then says how to build its own environment instead of giving an install line that
    would break the others."""

    _legacy_extra: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _accept_legacy_extra(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        # Plugin API 1 as first published took a free-form ``extra`` mapping; plugins written from that guide
        # keep loading (deprecation window: see EXTRA_REMOVED_IN) with their keys moved to the typed fields.
        if not (isinstance(data, Mapping) and "extra" in data):
            return handler(data)
        mapped, extra = _map_legacy_extra(dict(data))
        warnings.warn(
            _legacy_extra_warning(mapped.get("name"), extra),
            DeprecationWarning,
            stacklevel=_caller_stacklevel(),
        )
        spec = handler(mapped)
        spec._legacy_extra = extra
        return spec

    @property
    def extra(self) -> dict[str, Any]:
        """Deprecated (removed in amago-core 0.3): the first API's free-form mapping, rebuilt from the typed
        fields plus any other keys a legacy ``extra=`` held. Read ``tasks``, ``presets``, ... instead."""
        warnings.warn(
            f"ComponentSpec.extra is deprecated and is removed in {EXTRA_REMOVED_IN}; read the typed fields "
            f"({', '.join(LEGACY_EXTRA_KEYS)}) instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        typed: dict[str, Any] = {
            "tasks": list(self.tasks),
            "default_task": self.default_task,
            "presets": dict(self.presets),
            "cuda_kernels": dict(self.cuda_kernels),
            "example_obs": {k: v.model_dump(mode="json") for k, v in self.example_obs.items()},
        }
        return {**self._legacy_extra, **{k: v for k, v in typed.items() if v or k in self._legacy_extra}}

    @field_validator("group", mode="before")
    @classmethod
    def _group_from_its_string(cls, value: Any, info: ValidationInfo) -> ComponentGroup:
        try:
            return group_of_spec(value)
        except ValueError as exc:  # one line naming the spec, like the other spec problems
            raise InvalidSpecError(f"spec {info.data.get('name')!r}: {exc}") from None

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
        factory_problem = self._factory_problem()
        if factory_problem:
            problems.append(factory_problem)
        problems.extend(
            f"alias {alias!r} must be lowercase letters, digits and '_'"
            for alias in self.aliases
            if not _NAME_PATTERN.match(alias)
        )
        problems.extend(self._group_field_problems())
        if problems:
            raise InvalidSpecError(f"{where}: " + "; ".join(problems) + ".")
        return self

    def _factory_problem(self) -> str | None:
        """What is wrong with :attr:`factory` as an import path (None: nothing)."""
        if not _FACTORY_PATTERN.match(self.factory):
            return f"factory {self.factory!r} must look like 'package.module:Callable'"
        return None

    def _group_field_problems(self) -> list[str]:
        problems: list[str] = []
        suite_fields = {"tasks": self.tasks, "default_task": self.default_task, "presets": self.presets}
        if self.group is not ComponentGroup.ENV_SUITES:
            problems.extend(
                f"{field} is for env suites ({ComponentGroup.ENV_SUITES}) only"
                for field, v in suite_fields.items()
                if v
            )
        elif self.group_default:
            problems.append(
                "an env suite cannot be a group default (a run without an env uses the default job)"
            )
        if self.example_obs and self.group is not ComponentGroup.TSTEP_ENCODERS:
            problems.append(f"example_obs is for timestep encoders ({ComponentGroup.TSTEP_ENCODERS}) only")
        if self.default_task is not None and self.tasks and self.default_task not in self.tasks:
            problems.append(f"default_task {self.default_task!r} is not one of tasks {list(self.tasks)}")
        if self.tasks:
            problems.extend(
                f"preset {key!r} names no task.{did_you_mean(key, self.tasks)} Use '*' or one of {list(self.tasks)}"
                for key in self.presets
                if key != ANY_TASK and key not in self.tasks
            )
        return problems

    def missing_requirements(self) -> list[str]:
        """Import names from ``requires`` that are not importable here (probed without importing them)."""
        return [module_name for module_name in self.requires if not _importable(module_name.split(".")[0])]

    def factory_module_problem(self, provider: str = "the plugin that provides it") -> str | None:
        """One line when the factory's module is certainly not installed, found without importing anything.

        Listing must stay cheap, so only a module whose parent package is already imported (as the spec
        module's own package usually is) or a top-level one is probed; anything else passes here and is
        checked by `amago doctor`, which imports and builds every factory.

        Args:
            provider: who to reinstall, as the line says it (the registry passes the distribution's name).
        """
        module_name = self.factory.partition(":")[0]
        parent = module_name.rpartition(".")[0]
        if module_name in sys.modules or (parent and parent not in sys.modules) or _importable(module_name):
            return None
        return (
            f"{self.group} {self.name!r}: its factory module {module_name!r} does not exist "
            f"(factory {self.factory!r}); fix the spec's factory or reinstall {provider}."
        )

    def requirement_message(self, missing: list[str]) -> str:
        """One line: what is missing for this component and how to install it."""
        hint = self.install_hint or f"install the package that provides {', '.join(missing)}"
        return f"{self.group} {self.name!r} needs {', '.join(missing)}, which is not installed; run: {hint}"

    def preset_for(self, task: str | None) -> dict[str, Any]:
        """An env suite's preset for ``task`` (None: the default task): ``"*"`` with the task's own merged over it.

        Raises:
            InvalidSpecError: a preset is not a table of config sections.
        """
        chosen = task if task is not None else self.default_task
        layers = [self.presets.get(ANY_TASK, {}), self.presets.get(chosen, {}) if chosen else {}]
        merged: dict[str, Any] = {}
        for layer in layers:
            if not isinstance(layer, Mapping):
                msg = f"env suite {self.name!r}: its preset for {chosen or ANY_TASK!r} is not a config table."
                raise InvalidSpecError(msg)
            merged = deep_merge(merged, layer)
        return merged

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
        try:
            target = _import_attr(self.factory)
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
