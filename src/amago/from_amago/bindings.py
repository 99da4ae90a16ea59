"""AMAGO's gin bindings given in Python (``cli_utils.use_config``), and the pending settings ``amago.Experiment``
reads when it is constructed.

AMAGO's scripts set keyword defaults before building the experiment: ``use_config({"TformerTrajEncoder.n_heads":
16, ...}, gin_files)`` bound them with gin, and ``Experiment(...)`` then built its parts with them. Here each
binding goes one of three ways, by what it binds:

1. a gin configurable of AMAGO itself (``TformerTrajEncoder``, ``amago.agent.Agent``, ``binary_filter``...): kept
   as a gin statement among the *pending bindings* of this process and translated into amago settings by the one
   mapping (:mod:`amago.from_amago.gin`, which ``amago migrate-gin`` uses too);
2. an option of an installed amago component named by its class or factory
   (``amago_plugin_lstm.encoder.LSTMTrajEncoder.d_hidden``, what ``switch_traj_encoder(config, "lstm", ...)``
   writes for a component AMAGO did not have): kept as the setting ``traj_encoder.d_hidden`` of the ``lstm`` kind;
3. anything else (the script's own ``@gin.configurable`` classes and functions, a subclass of an AMAGO class
   such as ``TMazeExploration.horizon``): handed to gin-config, imported only then (``pip install "amago[gin]"``).

A class of AMAGO's example scripts that the mapping knows (``TMazeExploration``, amago's ``tmaze`` exploration) is
the script's own when the script defines it with ``@gin.configurable`` (way 3, as AMAGO's example 04 does), and
goes through the mapping (way 1) when it does not (bindings carried over from an AMAGO run into a script that
uses amago's components). Through the mapping, a binding of a base class's parameter counts as gin applied it:
``EpsilonGreedy.eps_start`` never reached ``TMazeExploration``, which passes it itself (a warning line), while
``EpsilonGreedy.randomize_eps`` did.

The pending bindings are process-wide, like gin's config. Every ``amago.Experiment`` constructed afterwards reads
them (:func:`pending_tree`) below its own keyword arguments (a keyword wins, as an explicit argument won over gin
in AMAGO), and they stay for the next one (AMAGO's example scripts build one experiment per trial). The
Experiment's component choices decide which AMAGO class a binding belongs to, as the classes a script passed
did in AMAGO: with ``traj_encoder_type=GRUTrajEncoder``, bindings of ``TformerTrajEncoder`` have no effect.
:func:`pending_settings` shows what is pending; :func:`clear_bindings` forgets it (gin's ``gin.clear_config()``
clears only gin's side).

AMAGO's two exploration wrappers are gin configurables too when gin-config is installed
(:mod:`amago.from_amago.exploration`): their bindings (``EpsilonGreedy.randomize_eps``) go through the mapping and
are also bound in gin, so a script's own subclass, which the Experiment builds as ``cls(env)``, gets them where gin
gave them in AMAGO (arguments the subclass does not pass itself).

A binding amago cannot honour fails in one line naming it (an AMAGO parameter without counterpart, a value that
does not convert, a parameter AMAGO's class does not have); one that never took effect in AMAGO either (set by the
run, inside a gin scope nothing opens, or a base class's argument its subclass passes itself) is one warning line. Imports no torch.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amago.from_amago.gin.mapping import BY_NAME, lookup
from amago.from_amago.gin.migration import Note, NoteReason, migrate
from amago.from_amago.gin.model import AMAGO_VERSION, GinConfigurable
from amago.from_amago.gin.output import plain
from amago.from_amago.gin.syntax import GinStatement, Macro, Reference, read_gin, resolve_macros
from amago_core.config.components import SLOT_GROUPS
from amago_core.config.sources import deep_merge
from amago_core.plugins import PluginError, registries
from amago_core.plugins.in_process import InProcessSpec
from amago_core.plugins.registry import Registries

GIN_INSTALL = 'pip install "amago[gin]"'
"""What installs gin-config for the bindings of a script's own configurables."""

SLOT_KEYWORDS: dict[str, str] = {
    "tstep_encoder": "tstep_encoder_type",
    "traj_encoder": "traj_encoder_type",
    "agent": "agent_type",
    "exploration": "exploration_wrapper_type",
}
"""AMAGO's ``Experiment`` parameter that picks each component slot."""

_ERRORS: frozenset[NoteReason] = frozenset({"unknown", "no_parameter", "not_translated", "no_counterpart"})
"""Notes that mean a binding cannot be honoured: ``use_config`` refuses it."""
_WARNINGS: frozenset[NoteReason] = frozenset({"run", "scope", "passed_by_subclass"})
"""Notes of bindings that took no effect in AMAGO either: one warning line each."""

_SOURCE = "use_config"
"""The source name of a binding given in ``use_config``'s dict."""


class BindingWarning(UserWarning):
    """A binding ``use_config`` keeps no setting for because it took no effect in AMAGO either."""


@dataclass
class PendingBindings:
    """What ``use_config`` left for the next ``amago.Experiment``.

    Attributes:
        statements: the bindings of AMAGO's configurables (and the macros of their files), in order.
        component_options: ``{"traj_encoder.d_hidden": 64}``-style options of installed amago components named by
            their class, with the kind each belongs to (``{"traj_encoder.d_hidden": ("lstm", 64)}``).
        final: ``use_config(..., finalize=True)`` ran (no more bindings, as gin's ``finalize`` locks its config).
    """

    statements: list[GinStatement] = field(default_factory=list)
    component_options: dict[str, tuple[str, Any]] = field(default_factory=dict)
    final: bool = False


_PENDING = PendingBindings()


def clear_bindings() -> None:
    """Forgets every pending binding and unlocks ``use_config`` (gin's own config: ``gin.clear_config()``)."""
    global _PENDING
    _PENDING = PendingBindings()


def has_pending_bindings() -> bool:
    """Whether ``use_config`` left bindings for the next Experiment."""
    return bool(_PENDING.statements or _PENDING.component_options)


def pending_settings() -> dict[str, Any]:
    """The amago settings the pending bindings give an Experiment that picks no component itself (config key ->
    value: ``{"traj_encoder.kind": "transformer", "traj_encoder.n_heads": 16}``)."""
    settings = dict(migrate(_PENDING.statements).settings) if _PENDING.statements else {}
    for key, (kind, value) in _PENDING.component_options.items():
        settings[f"{key.partition('.')[0]}.kind"] = kind
        settings[key] = value
    return settings


def amago_class_for(slot: str, kind: str | None, *, examples: bool = False) -> GinConfigurable | None:
    """AMAGO's class that the component ``kind`` of ``slot`` stands for (``traj_encoder``, ``transformer``:
    ``TformerTrajEncoder``), or None when AMAGO had none; ``examples``: a class of AMAGO's example scripts counts
    too (``exploration``, ``tmaze``: ``TMazeExploration``), which no module of AMAGO's package holds."""
    row = BY_NAME["Experiment"].parameter(SLOT_KEYWORDS[slot])
    if row is None or kind is None:
        return None
    return next(
        (
            BY_NAME[name]
            for name in row.choices
            if BY_NAME[name].picks == ((f"{slot}.kind", kind),) and (examples or not BY_NAME[name].example)
        ),
        None,
    )


def installed_components(found: Registries | None = None) -> dict[str, tuple[str, str]]:
    """The dotted path of every installed component's class or factory -> ``(slot, registered name)``
    (``amago_nets.traj_transformer.TransformerTrajEncoder`` -> ``("traj_encoder", "transformer")``)."""
    found = registries() if found is None else found
    paths: dict[str, tuple[str, str]] = {}
    for slot, group in SLOT_GROUPS.items():
        registry = found[group]
        for name in registry.names():
            try:
                spec = registry.spec(name)
            except PluginError:
                continue  # a broken entry stands for no class
            if not isinstance(spec, InProcessSpec):
                paths[spec.factory.replace(":", ".")] = (slot, spec.name)
    return paths


def _component_of(target: str, components: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    """The installed component a binding's target names: by its full dotted path, or by its class name alone
    when exactly one installed component has it."""
    if target in components:
        return components[target]
    if "." in target:
        return None
    matches = {value for path, value in components.items() if path.rpartition(".")[2] == target}
    return matches.pop() if len(matches) == 1 else None


def _split(key: Any) -> tuple[str | None, str, str]:
    """``scope/Configurable.parameter`` -> its three parts.

    Raises:
        ValueError: not a binding key.
    """
    if isinstance(key, str):
        scope, _, name = key.rpartition("/")
        target, _, parameter = name.rpartition(".")
        if target and parameter.isidentifier() and all(part.isidentifier() for part in target.split(".")):
            return scope or None, target, parameter
    msg = f"use_config: {key!r} is not a gin binding; write 'Configurable.parameter' (e.g. 'Agent.gamma')"
    raise ValueError(msg)


def _gin_value(value: Any, components: dict[str, tuple[str, str]]) -> Any:
    """A Python value of ``use_config``'s dict as the gin reader writes values: a class or function becomes a
    ``@reference`` to the AMAGO configurable it is (amago's ``IMPALAishCNN``, ``exp_filter``) or stands for (amago's
    ``TransformerTrajEncoder`` is ``TformerTrajEncoder``)."""
    if isinstance(value, list):
        return [_gin_value(item, components) for item in value]
    if isinstance(value, tuple):
        return tuple(_gin_value(item, components) for item in value)
    if isinstance(value, dict):
        return {key: _gin_value(item, components) for key, item in value.items()}
    name = getattr(value, "__qualname__", None) if callable(value) else None
    if not isinstance(name, str):
        return value
    if lookup(name) is not None:
        return Reference(name)
    path = f"{getattr(value, '__module__', '')}.{name}"
    component = components.get(path)
    configurable = amago_class_for(*component) if component is not None else None
    return Reference(configurable.name if configurable is not None else path)


def _gin() -> Any:
    """gin-config, imported now.

    Raises:
        ImportError: gin-config is not installed (one line with the install command).
    """
    try:
        return importlib.import_module("gin")
    except ImportError:
        msg = (
            "use_config: bindings of your own @gin.configurable classes need gin-config, which is not installed; "
            f"run: {GIN_INSTALL}"
        )
        raise ImportError(msg) from None


def _one_line(notes: Sequence[Note], where: str) -> str:
    first = notes[0]
    place = first.where if not first.where.startswith(f"{_SOURCE}:") else where
    more = (
        f" (and {len(notes) - 1} more: {', '.join(n.binding for n in notes[1:])})" if len(notes) > 1 else ""
    )
    return f"{place}: {first.binding}: {first.message}{more}"


@dataclass
class _Parsed:
    """One ``use_config`` call's bindings, sorted by where each goes."""

    statements: list[GinStatement] = field(default_factory=list)
    component_options: dict[str, tuple[str, Any]] = field(default_factory=dict)
    to_gin: list[tuple[str, Any]] = field(default_factory=list)
    gin_files: list[tuple[str, list[str]]] = field(default_factory=list)


def _component_option(
    target: str, parameter: str, value: Any, component: tuple[str, str], found: Registries, where: str
) -> tuple[str, tuple[str, Any]]:
    """``(config key, (kind, value))`` for an option of an installed component.

    Raises:
        ValueError: the component has no such option.
    """
    slot, kind = component
    spec = found[SLOT_GROUPS[slot]].spec(kind)
    fields = sorted(name for name in spec.config.model_fields if name != "kind")
    if parameter not in fields:
        msg = (
            f"{where}: {target}.{parameter}: the {slot} {kind!r} has no option {parameter!r}; its options: "
            f"{', '.join(fields)} (`amago show {SLOT_GROUPS[slot].cli_name} {kind}`)"
        )
        raise ValueError(msg)
    if isinstance(value, Reference | Macro):
        msg = f"{where}: {target}.{parameter}: amago takes a plain value here, not {value}"
        raise ValueError(msg)
    return f"{slot}.{parameter}", (kind, plain(value))


def _script_defines(target: str) -> bool:
    """Whether the script registered a gin configurable named ``target`` itself (AMAGO's example 04 defines
    ``TMazeExploration``): its bindings then go to gin-config, for the script's class.

    Raises:
        ImportError: gin-config is not installed (a script defining such classes imports it).
    """
    gin = _gin()
    registry = getattr(
        getattr(gin, "config", None), "_REGISTRY", None
    )  # gin lists its configurables nowhere else
    if registry is None:
        return True  # cannot tell: the script's own, as before the mapping knew the name
    return registry.get_match(target) is not None


def _mapped(target: str) -> bool:
    """Whether a binding of ``target`` goes through the gin mapping: one of AMAGO's configurables, or a class of
    AMAGO's examples (``TMazeExploration``, amago's ``tmaze`` exploration) that the script does not define itself."""
    configurable = lookup(target)
    if configurable is None:
        return False
    return not configurable.example or not _script_defines(target)


EXPLORATION_WRAPPERS = frozenset({"EpsilonGreedy", "BilevelEpsilonGreedy"})
"""AMAGO's configurables whose bindings also go to gin (a script's subclass of them reads them there)."""


def _wrapper_binding(target: str) -> bool:
    """Whether ``target`` names one of AMAGO's two exploration wrappers and gin-config is installed (their
    bindings then reach a script's subclass through gin, as in AMAGO)."""
    if target.rpartition(".")[2] not in EXPLORATION_WRAPPERS or lookup(target) is None:
        return False
    try:
        importlib.import_module("gin")
    except ImportError:
        return False
    importlib.import_module("amago.from_amago.exploration")  # registers the two with gin
    return True


def _parse(custom_params: Mapping[str, Any], gin_configs: Sequence[str | Path], found: Registries) -> _Parsed:
    components = installed_components(found)
    parsed = _Parsed()
    for index, (key, value) in enumerate(custom_params.items(), start=1):
        scope, target, parameter = _split(key)
        component = _component_of(target, components) if lookup(target) is None else None
        if _mapped(target):
            converted = _gin_value(value, components)
            parsed.statements.append(GinStatement(_SOURCE, index, scope, target, parameter, converted))
            if _wrapper_binding(target):
                parsed.to_gin.append((key, value))
        elif component is not None and scope is None:
            name, option = _component_option(target, parameter, value, component, found, _SOURCE)
            parsed.component_options[name] = option
        else:
            parsed.to_gin.append((key, value))
    for path in gin_configs:
        try:
            statements = read_gin(path)
        except OSError as exc:
            msg = f"use_config: cannot read the gin file {str(path)!r}: {exc.strerror or exc}"
            raise FileNotFoundError(msg) from None
        macros = {s.target: s for s in statements if s.parameter is None}
        skip: list[str] = []
        for statement in statements:
            if statement.parameter is None:
                parsed.statements.append(statement)  # macros: the mapping resolves them
                continue
            component = (
                _component_of(statement.target, components) if lookup(statement.target) is None else None
            )
            if _mapped(statement.target):
                parsed.statements.append(statement)
                skip.append(statement.target)
                value = resolve_macros(statement.value, macros)
                if _wrapper_binding(statement.target) and not isinstance(value, Reference | Macro):
                    scope = f"{statement.scope}/" if statement.scope else ""
                    parsed.to_gin.append((f"{scope}{statement.target}.{statement.parameter}", plain(value)))
            elif component is not None and statement.scope is None:
                value = resolve_macros(statement.value, macros)
                name, option = _component_option(
                    statement.target, statement.parameter, value, component, found, statement.where
                )
                parsed.component_options[name] = option
                skip.append(statement.target)
        if len(skip) < sum(s.parameter is not None for s in statements):
            # the file binds configurables of the script's own too: gin reads it, skipping AMAGO's and amago's
            parsed.gin_files.append((str(path), sorted({*skip, *_referenced(statements)})))
    return parsed


def _referenced(statements: Sequence[GinStatement]) -> set[str]:
    """The names of AMAGO's configurables that ``@references`` in ``statements`` name (gin must skip them too)."""
    found: set[str] = set()

    def visit(value: Any) -> None:
        if isinstance(value, Reference) and lookup(value.name) is not None:
            found.add(value.name)
        elif isinstance(value, list | tuple):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)

    for statement in statements:
        visit(statement.value)
    return found


def use_bindings(
    custom_params: Mapping[str, Any],
    gin_configs: Sequence[str | Path] | None = None,
    finalize: bool = True,
    *,
    found: Registries | None = None,
) -> None:
    """``cli_utils.use_config``: binds ``custom_params``, then each gin file (later wins), for the next Experiments.

    Everything is checked before anything is kept: a refused binding leaves the pending bindings as they were.

    Raises:
        RuntimeError: an earlier call finalized the bindings.
        ValueError: a binding cannot be honoured (one line naming it and why), or is no binding key.
        FileNotFoundError: a gin file cannot be read.
        amago.from_amago.gin.GinSyntaxError: a gin file cannot be parsed.
        ImportError: bindings of the script's own configurables, without gin-config installed.
    """
    if _PENDING.final:
        msg = (
            "use_config: the bindings are final (an earlier use_config(..., finalize=True)); give every binding "
            "in one call, or pass finalize=False to the earlier calls"
        )
        raise RuntimeError(msg)
    if not isinstance(custom_params, Mapping):
        msg = f"use_config: custom_params must be a dict of 'Configurable.parameter': value, got {custom_params!r}"
        raise TypeError(msg)
    if isinstance(gin_configs, str | Path):
        gin_configs = [gin_configs]  # AMAGO iterated over it; a lone path would be read letter by letter
    found = registries() if found is None else found
    parsed = _parse(custom_params, list(gin_configs or ()), found)
    statements = [*_PENDING.statements, *parsed.statements]
    notes = migrate(statements).notes
    refused = [note for note in notes if note.reason in _ERRORS]
    if refused:
        raise ValueError(_one_line(refused, _SOURCE))
    if parsed.to_gin or parsed.gin_files:
        _bind_with_gin(parsed)
    earlier = {(n.where, n.binding, n.reason) for n in migrate(_PENDING.statements).notes}
    for note in notes:
        if note.reason in _WARNINGS and (note.where, note.binding, note.reason) not in earlier:
            warnings.warn(f"use_config: {note.binding}: {note.message}", BindingWarning, stacklevel=3)
    _PENDING.statements = statements
    _PENDING.component_options.update(parsed.component_options)
    if finalize:
        _PENDING.final = True
        gin = sys.modules.get("gin")
        if gin is not None:
            gin.finalize()


def _bind_with_gin(parsed: _Parsed) -> None:
    gin = _gin()
    for key, value in parsed.to_gin:
        try:
            gin.bind_parameter(key, value)
        except ValueError as exc:
            reason = (str(exc).strip().splitlines() or [""])[0]
            msg = (
                f"use_config: {key}: neither a gin configurable of AMAGO {AMAGO_VERSION}, an option of an installed "
                f"amago component, nor a @gin.configurable of this script (gin: {reason}); check the spelling, "
                "and that the module defining it is imported"
            )
            raise ValueError(msg) from None
    for path, skip in parsed.gin_files:
        gin.parse_config_file(path, skip_unknown=skip)


def _slot_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        kind = value.get("kind")
        return kind if isinstance(kind, str) else None
    return None


def pending_tree(kinds: Mapping[str, str | None], found: Registries | None = None) -> dict[str, Any]:
    """The pending bindings as a config tree for an Experiment whose component slots are ``kinds``.

    Args:
        kinds: slot -> the registered name the Experiment picks for it (None or absent: the bindings decide, else
            the default). A picked kind keeps only the bindings of that kind's class: bindings of AMAGO's other
            classes had no effect in AMAGO either.
        found: where component names are looked up (aliases become names).
    """
    if not has_pending_bindings():
        return {}
    found = registries() if found is None else found
    chosen: dict[str, str] = {}
    for slot, kind in kinds.items():
        if kind is None:
            continue
        try:
            chosen[slot] = found[SLOT_GROUPS[slot]].spec(kind).name
        except (PluginError, KeyError):
            chosen[slot] = kind
    statements = list(_PENDING.statements)
    for slot, kind in chosen.items():
        configurable = amago_class_for(slot, kind, examples=True)
        if configurable is not None:  # the Experiment's pick, as AMAGO's script passed the class
            reference = Reference(configurable.name)
            statements.append(
                GinStatement("amago.Experiment", 0, None, "Experiment", SLOT_KEYWORDS[slot], reference)
            )
    mapped = _tree(migrate(statements).settings) if _PENDING.statements else {}
    options: dict[str, Any] = {}
    for key, (kind, value) in _PENDING.component_options.items():
        slot = key.partition(".")[0]
        options = deep_merge(options, {slot: {"kind": kind, key.partition(".")[2]: value}})
    for tree in (mapped, options):
        for slot, kind in chosen.items():
            if slot in tree and _slot_kind(tree[slot]) not in (None, kind):
                del tree[slot]
    return deep_merge(mapped, options)


def _tree(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``{"traj_encoder.kind": "transformer", "traj_encoder.n_layers": 4}`` as a nested config tree."""
    tree: dict[str, Any] = {}
    for key, value in settings.items():
        layer: Any = value
        for part in reversed(key.split(".")):
            layer = {part: layer}
        tree = deep_merge(tree, layer)
    return tree


def null_paths(tree: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The paths of the None values in ``tree`` (a binding of None sets None, where a flag of None is unset)."""
    paths: list[tuple[str, ...]] = []
    for key, value in tree.items():
        if isinstance(value, Mapping):
            paths.extend(null_paths(value, (*prefix, key)))
        elif value is None:
            paths.append((*prefix, key))
    return paths


__all__ = [
    "EXPLORATION_WRAPPERS",
    "GIN_INSTALL",
    "SLOT_KEYWORDS",
    "BindingWarning",
    "PendingBindings",
    "amago_class_for",
    "clear_bindings",
    "has_pending_bindings",
    "installed_components",
    "null_paths",
    "pending_settings",
    "pending_tree",
    "use_bindings",
]
