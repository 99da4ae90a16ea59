"""``Registry``: one per component group. Lists from metadata, loads specs lazily, builds components."""

from __future__ import annotations

import difflib
import enum
import functools
import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from amago_core.plugins import in_process
from amago_core.plugins.component_config import ComponentConfig
from amago_core.plugins.discovery import (
    HOOKS_ENTRY_POINT_GROUP,
    EntryRecord,
    PluginSwitches,
    scan_entry_points,
)
from amago_core.plugins.errors import (
    BrokenPluginError,
    DuplicateComponentError,
    MissingRequirementError,
    PluginError,
    UnknownComponentError,
)
from amago_core.plugins.groups import GROUPS, ComponentGroup, find_group
from amago_core.plugins.in_process import IN_PROCESS_KEY, InProcessSpec
from amago_core.plugins.spec import (
    _NAME_PATTERN,
    PLUGIN_API_VERSION,
    BrokenSpec,
    ComponentSpec,
    defer_spec_errors,
)
from amago_core.suggest import did_you_mean


class Status(enum.StrEnum):
    """Health of one registered component."""

    OK = "ok"
    MISSING = "missing"  # an optional requirement is not installed; the install hint says what to do
    # The spec or its module cannot be loaded, the spec contradicts its entry, or its factory module does not
    # exist (listing never imports factories: `amago doctor` imports and builds each one).
    BROKEN = "broken"
    CONFLICT = "conflict"  # two distributions register the name


@dataclass
class ComponentInfo:
    """What listings show about one component (aliases folded into their canonical entry).

    Attributes:
        name: canonical name (the spec's name when it loaded, else the entry name).
        aliases: other entry names that resolve to it.
        group: the component group.
        distribution: installing distribution(s), ``name version``; two when in conflict. A component
            registered by this process shows ``in-process (module:Class)``.
        status: ok / missing / broken / conflict.
        summary: the spec's one-line summary ("" when it could not be loaded).
        detail: what is wrong and what to do, for any status but ok.
        spec: the loaded spec, when it loaded.
    """

    name: str
    aliases: list[str]
    group: ComponentGroup
    distribution: list[str]
    status: Status
    summary: str = ""
    detail: str = ""
    spec: ComponentSpec | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe form for ``--json`` outputs."""
        return {
            "name": self.name,
            "aliases": self.aliases,
            "group": self.group.cli_name,
            "distribution": self.distribution,
            "status": str(self.status),
            "default": bool(self.spec is not None and self.spec.group_default),
            "in_process": isinstance(self.spec, InProcessSpec),
            "summary": self.summary,
            "detail": self.detail,
        }


def normalize_name(name: str) -> str:
    """Component names are lowercase with ``_``; users may type ``-`` (``frozen-lake``)."""
    return name.strip().lower().replace("-", "_")


class Registry:
    """The components of one group, as installed, plus those this process registered itself.

    Listing (:meth:`names`) reads metadata only. :meth:`spec` imports the entry's spec module (torch-free by
    contract) and caches the result or the failure. :meth:`build` imports the implementation. Components a
    script registered (:meth:`register_in_process`) live in a table of the process, read on every lookup, so
    every registry of the group sees them, however old, and a rescan keeps them.
    """

    def __init__(self, group: ComponentGroup, records: list[EntryRecord]):
        self.group = group
        self._active: dict[str, list[EntryRecord]] = {}
        self._skipped: dict[str, list[EntryRecord]] = {}
        for record in records:
            bucket = self._skipped if record.skip_reason else self._active
            bucket.setdefault(normalize_name(record.name), []).append(record)
        self._loaded: dict[tuple[str, str], ComponentSpec | BaseException] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """Every active entry name (canonical names and aliases) and every name registered in-process, sorted;
        imports nothing."""
        return sorted(self._active.keys() | in_process.specs(self.group).keys())

    def records(self, name: str) -> list[EntryRecord]:
        """The active entry records of installed distributions under ``name`` (more than one means a
        conflict); none for a name registered in-process."""
        return list(self._active.get(normalize_name(name), []))

    def skipped(self) -> list[EntryRecord]:
        """Entries the plugin switches turned off."""
        return [r for recs in self._skipped.values() for r in recs]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = normalize_name(name)
        return key in self._active or in_process.lookup(self.group, key) is not None

    def _load_record(self, record: EntryRecord) -> ComponentSpec:
        key = (record.distribution, record.name)
        with self._lock:
            cached = self._loaded.get(key)
            if cached is None:
                cached = self._import_spec(record)
                self._loaded[key] = cached
        if isinstance(cached, BaseException):
            raise cached
        return cached

    def _import_spec(self, record: EntryRecord) -> ComponentSpec | BaseException:
        where = f"{self.group.label} {record.name!r} from {record.origin} ({record.value})"
        try:
            # An invalid spec of the module becomes a BrokenSpec rather than failing the import, so it breaks
            # only its own entries and the module's other specs still load.
            with defer_spec_errors():
                obj = record.load()
        except Exception as exc:
            error = BrokenPluginError(
                f"{where} cannot be imported ({type(exc).__name__}: {exc}). "
                f"Fix or reinstall {record.distribution}, or block it with AMAGO_BLOCK_PLUGINS={record.distribution}."
            )
            error.__cause__ = exc
            return error
        problem = self._spec_problem(record, obj)
        if problem:
            return BrokenPluginError(f"{where}: {problem}")
        return obj  # type: ignore[return-value]

    def _spec_problem(self, record: EntryRecord, obj: object) -> str | None:
        if isinstance(obj, BrokenSpec):
            return (
                f"its spec is invalid: {obj.problem} Fix the spec in {record.distribution}, or block it with "
                f"AMAGO_BLOCK_PLUGINS={record.distribution}."
            )
        if not isinstance(obj, ComponentSpec):
            return f"the entry point names a {type(obj).__name__}, not an amago_core.plugins.ComponentSpec."
        if obj.group is not self.group:
            return (
                f"the spec says group {obj.group.entry_point_group!r} but is registered under "
                f"{self.group.entry_point_group!r}; "
                "register it in the group its spec names."
            )
        entry = normalize_name(record.name)
        if entry != obj.name and entry not in obj.aliases:
            return (
                f"the entry name {record.name!r} is neither the spec's name {obj.name!r} nor one of its aliases "
                f"{list(obj.aliases)}; rename the entry point or add the alias to the spec."
            )
        if obj.api_version > PLUGIN_API_VERSION:
            return (
                f"the spec needs plugin API {obj.api_version}, this amago-core provides {PLUGIN_API_VERSION}; "
                "upgrade amago-core."
            )
        return None

    def spec(self, name: str) -> ComponentSpec:
        """The spec registered under ``name`` (an alias resolves to its canonical spec; a name this process
        registered gives its :class:`~amago_core.plugins.in_process.InProcessSpec`).

        Raises:
            UnknownComponentError: no installed distribution registers it (with did-you-mean).
            DuplicateComponentError: two distributions register it, or one does and this process too.
            BrokenPluginError: its spec cannot be loaded (cause chained).
        """
        key = normalize_name(name)
        local = in_process.lookup(self.group, key)
        if local is not None:
            records = self._active.get(key)
            if records:  # a plugin installed after the registration, then a rescan
                raise DuplicateComponentError(self.duplicate_message(key, records, local))
            return local
        return self._installed_spec(name)

    def _installed_spec(self, name: str) -> ComponentSpec:
        key = normalize_name(name)
        records = self._active.get(key)
        if not records:
            for other in self._active:  # a spec may be known by a name that is not its entry name
                try:
                    candidate = self._load_record(self._active[other][0])
                except BrokenPluginError:
                    continue
                if key == candidate.name or key in candidate.aliases:
                    return candidate
            raise UnknownComponentError(self.unknown_message(name))
        if len(records) > 1:
            raise DuplicateComponentError(self.duplicate_message(key, records))
        return self._load_record(records[0])

    def resolve(self, name: str) -> str:
        """The canonical name of ``name`` (``gru`` -> ``rnn``)."""
        return self.spec(name).name

    def unknown_message(self, name: str) -> str:
        installed = ", ".join(self.names()) or "(none)"
        message = f"unknown {self.group.label} {name!r}.{did_you_mean(normalize_name(name), self.names())}"
        skipped = self._skipped.get(normalize_name(name))
        if skipped:
            message += f" It comes from {skipped[0].origin}, which is off: {skipped[0].skip_reason}."
        return f"{message} Installed: {installed}. See `amago list {self.group.cli_name}`."

    def duplicate_message(
        self, name: str, records: list[EntryRecord], local: InProcessSpec | None = None
    ) -> str:
        origins = " and ".join(f"{r.origin} ({r.value})" for r in records)
        if local is not None:
            return (
                f"{self.group.label} {name!r} is registered both by {origins} and in this process by "
                f"{local.factory}; register the class under another name, or turn the distribution off with "
                f"AMAGO_BLOCK_PLUGINS={records[0].distribution}."
            )
        return (
            f"{self.group.label} {name!r} is registered by more than one distribution: {origins}. "
            f"Uninstall one, or turn one off with AMAGO_BLOCK_PLUGINS=<distribution>."
        )

    def in_process_record_message(self, name: object, recorded: object, local: InProcessSpec | None) -> str:
        """One line for a recorded config whose ``name`` was registered in-process by the class ``recorded``,
        when this process registered nothing (or another class) under that name."""
        module = str(recorded).partition(":")[0]
        where = (
            "run it from the script that registered it"
            if module == "__main__"
            else f"import {module} (or run it from its script)"
        )
        found = "" if local is None else f", but this process registered {local.factory} under that name"
        # The record is data from a run folder: the module it names is never imported from here.
        return (
            f"{self.group.label} {name!r} was registered in-process by {recorded} in the run that wrote this "
            f"config{found}; {where} before resuming or evaluating the run."
        )

    def make_config(self, value: str | Mapping[str, Any] | ComponentConfig) -> ComponentConfig:
        """Validates a name, a table with ``kind``, or a config instance into the chosen plugin's Config.

        A table that records the class a run registered in-process (:data:`~amago_core.plugins.in_process.
        IN_PROCESS_KEY`, as ``config.resolved.json`` does) validates only when this process registered that
        same class under the table's ``kind``; otherwise the error names the module to import (nothing is
        imported from the table).
        """
        if isinstance(value, ComponentConfig):
            return self.spec(value.kind).make_config(value)
        if isinstance(value, str):
            return self.spec(value).make_config(None)
        data = dict(value)
        kind = data.get("kind")
        if IN_PROCESS_KEY in data:
            recorded = data.pop(IN_PROCESS_KEY)
            local = in_process.lookup(self.group, normalize_name(kind)) if isinstance(kind, str) else None
            if local is None or local.factory != recorded:
                raise UnknownComponentError(self.in_process_record_message(kind, recorded, local))
        if not isinstance(kind, str):
            msg = f"a {self.group.label} table needs kind = '<name>'; installed: {', '.join(self.names()) or '(none)'}."
            raise ValueError(msg)
        spec = self.spec(kind)
        data["kind"] = spec.name
        return spec.make_config(data)

    def build(self, value: str | Mapping[str, Any] | ComponentConfig, /, **context: Any) -> Any:
        """Builds a component from a name, a table or a config, passing the inferred ``context``."""
        config = self.make_config(value)
        return self.spec(config.kind).build(config, **context)

    def describe(self) -> list[ComponentInfo]:
        """Loads every spec and reports each component's status; one broken plugin never hides the rest."""
        infos: dict[str, ComponentInfo] = {}
        local = in_process.specs(self.group)
        for key, registered in local.items():
            records = self._active.get(key, [])
            origins = [*(r.origin for r in records), registered.origin]
            status, detail = (
                (Status.CONFLICT, self.duplicate_message(key, records, registered))
                if records
                else (Status.OK, "")
            )
            infos[key] = ComponentInfo(
                key, [], self.group, origins, status, registered.summary, detail, registered
            )
        for key in sorted(self._active.keys() - local.keys()):
            records = self._active[key]
            origins = [r.origin for r in records]
            if len(records) > 1:
                infos[key] = ComponentInfo(
                    key, [], self.group, origins, Status.CONFLICT, detail=self.duplicate_message(key, records)
                )
                continue
            try:
                spec = self._load_record(records[0])
            except BrokenPluginError as exc:
                infos[key] = ComponentInfo(key, [], self.group, origins, Status.BROKEN, detail=str(exc))
                continue
            info = infos.get(spec.name)
            if info is not None and info.spec is spec:  # an alias of a spec already listed
                if key != spec.name:
                    info.aliases.append(key)
                continue
            missing = spec.missing_requirements()
            status, detail = (
                (Status.MISSING, spec.requirement_message(missing)) if missing else (Status.OK, "")
            )
            factory_problem = None if missing else spec.factory_module_problem(records[0].distribution)
            if factory_problem is not None:  # the cheap part of `amago doctor`'s build check
                status, detail = Status.BROKEN, factory_problem
            aliases = [key] if key != spec.name else []
            infos[spec.name] = ComponentInfo(
                spec.name, aliases, self.group, origins, status, spec.summary, detail, spec
            )
        return sorted(infos.values(), key=lambda info: info.name)

    def default_name(self) -> str:
        """The name of the installed component marked ``group_default``: what a run uses when it names none.

        Raises:
            UnknownComponentError: no installed distribution marks a default for this group.
            DuplicateComponentError: more than one does (both are named).
        """
        marked = [info for info in self.describe() if info.spec is not None and info.spec.group_default]
        if len(marked) > 1:
            origins = " and ".join(f"{info.name!r} ({'; '.join(info.distribution)})" for info in marked)
            msg = (
                f"two installed {self.group.label}s claim to be the default: {origins}. Choose one in the config "
                f"({self.group.key} = ...), or turn one off with AMAGO_BLOCK_PLUGINS=<distribution>."
            )
            raise DuplicateComponentError(msg)
        if not marked:
            msg = (
                f"no {self.group.label} chosen, and no installed distribution provides a default one; set "
                f"{self.group.key} in the config (installed: {', '.join(self.names()) or '(none)'}; "
                f"see `amago list {self.group.cli_name}`)."
            )
            raise UnknownComponentError(msg)
        return marked[0].name

    def builder(self, value: str | Mapping[str, Any] | ComponentConfig) -> Callable[..., Any]:
        """A callable that builds the chosen component from its inferred context, bound to this registry.

        What a component that builds others receives (an agent gets its encoders' builders), so that it never
        looks a name up in a registry of its own. The choice is validated now; the factory is imported when the
        builder is called.
        """
        config = self.make_config(value)
        return functools.partial(self.spec(config.kind).build, config)

    def spec_for_class(self, cls: type) -> ComponentSpec | None:
        """The spec a class given for a slot stands for: the one this process registered for exactly that class,
        else the installed spec whose factory is the class or its nearest base; None for any other class.

        A class derived from one registered in-process is not that component: the registered class takes no
        config unless it derives from an installed one itself, so its subclass is matched against installed
        factories only, as the registered class was.
        """
        for spec in in_process.specs(self.group).values():
            if spec.target is cls:
                return spec
        return self._installed_spec_for_class(cls)

    def _installed_spec_for_class(self, cls: type) -> ComponentSpec | None:
        by_factory: dict[str, ComponentSpec] = {}
        for key in sorted(self._active):
            try:
                spec = self._installed_spec(key)
            except PluginError:
                continue  # a broken or conflicting entry stands for no class
            by_factory[spec.factory] = spec
        for klass in inspect.getmro(cls):
            found = by_factory.get(f"{klass.__module__}:{klass.__qualname__}")
            if found is not None:
                return found
        return None

    def register_in_process(self, name: str, target: Any) -> InProcessSpec:
        """Registers a class (or factory function) of this process under ``name``, for every registry of the
        group (AMAGO's ``register_traj_encoder(name)`` and its siblings call this).

        The name then works wherever a registered name does in this process: ``Experiment(traj_encoder_type=
        name)``, ``-o traj_encoder=name`` on a command line run from here, ``amago list``. It builds exactly like
        the class given for the slot (see :mod:`amago_core.plugins.in_process`). Registering the same class again
        is a no-op.

        Args:
            name: the name to use (``-`` is read as ``_``, upper case as lower case).
            target: the class or function.

        Returns:
            The spec registered under the name.

        Raises:
            ValueError: the group takes no in-process components, or the name is not a component name.
            TypeError: ``target`` is not callable.
            DuplicateComponentError: an installed distribution, or another class of this process, has the name
                (both are named).
        """
        group = self.group
        if group not in in_process.IN_PROCESS_GROUPS:
            allowed = ", ".join(g.cli_name for g in in_process.IN_PROCESS_GROUPS)
            msg = (
                f"{group.label}s cannot be registered in-process (only {allowed}); write a plugin instead "
                "(docs/tutorial/08-write-a-plugin.md)."
            )
            raise ValueError(msg)
        if not isinstance(name, str):
            msg = (
                f'a {group.label} is registered under a name given first, e.g. @register_{group.key}("my_name"), '
                f"not {name!r}."
            )
            raise TypeError(msg)
        key = normalize_name(name)
        if not _NAME_PATTERN.match(key):
            msg = (
                f"cannot register {group.label} {name!r}: a name is letters, digits and '_' (or '-'), starting "
                "with a letter."
            )
            raise ValueError(msg)
        if not callable(target):
            msg = f"cannot register {group.label} {key!r}: {target!r} is not a class or a function."
            raise TypeError(msg)
        path = in_process.class_path(target)
        installed = self._active.get(key)
        if installed:
            record = installed[0]
            msg = (
                f"cannot register {group.label} {key!r} for {path}: the installed distribution {record.origin} "
                f"registers that name ({record.value}); choose another name."
            )
            raise DuplicateComponentError(msg)
        held = in_process.lookup(group, key)
        if held is not None and held.target is target:
            return held
        base = self._installed_spec_for_class(target) if inspect.isclass(target) else None
        return in_process.add(in_process.make_spec(group, key, target, base))

    def unregister_in_process(self, name: str) -> bool:
        """Forgets a component this process registered (for every registry of the group); whether there was
        one."""
        return in_process.remove(self.group, normalize_name(name))

    def check_buildable(self, name: str) -> ComponentSpec:
        """The spec, after checking its requirements are installed (raises with the install hint)."""
        spec = self.spec(name)
        missing = spec.missing_requirements()
        if missing:
            raise MissingRequirementError(spec.requirement_message(missing))
        return spec


class Registries:
    """All component registries plus the hook entries, from one scan of installed metadata."""

    def __init__(self, switches: PluginSwitches | None = None):
        self.switches = switches or PluginSwitches.from_environ()
        wanted = {g.entry_point_group for g in GROUPS} | {HOOKS_ENTRY_POINT_GROUP}
        found = scan_entry_points(wanted, self.switches)
        self._by_group = {g: Registry(g, found[g.entry_point_group]) for g in GROUPS}
        self.hook_records = found[HOOKS_ENTRY_POINT_GROUP]

    def __getitem__(self, group: ComponentGroup | str) -> Registry:
        """The registry of ``group``: a :class:`ComponentGroup` or any of its spellings (``traj-encoders``)."""
        return self._by_group[group if isinstance(group, ComponentGroup) else find_group(group)]

    def __iter__(self):
        return iter(self._by_group.values())

    @property
    def traj_encoders(self) -> Registry:
        return self._by_group[ComponentGroup.TRAJ_ENCODERS]

    @property
    def tstep_encoders(self) -> Registry:
        return self._by_group[ComponentGroup.TSTEP_ENCODERS]

    @property
    def agents(self) -> Registry:
        return self._by_group[ComponentGroup.AGENTS]

    @property
    def explorations(self) -> Registry:
        return self._by_group[ComponentGroup.EXPLORATIONS]

    @property
    def env_suites(self) -> Registry:
        return self._by_group[ComponentGroup.ENV_SUITES]

    @property
    def relabelers(self) -> Registry:
        return self._by_group[ComponentGroup.RELABELERS]

    def resolve_env_id(self, env_id: str) -> tuple[str, str | None]:
        """Splits an env id into (suite name, task): the suite is the longest registered prefix.

        ``gym-CartPole-v1`` -> ("gym", "CartPole-v1"); ``frozen-lake`` -> ("frozen_lake", None).

        Raises:
            UnknownComponentError: no suite prefix matches (with did-you-mean and the suites).
        """
        typed = env_id.strip()
        folded = typed.replace("_", "-").lower()
        prefixed = (s for s in self.env_suites.names() if f"{folded}-".startswith(f"{s.replace('_', '-')}-"))
        best = max(prefixed, key=len, default=None)
        if best is None:
            suites = [s.replace("_", "-") for s in self.env_suites.names()]
            msg = (
                f"unknown env {env_id!r}: no installed env suite matches.{_guess_env_id(typed, suites)} "
                f"Suites: {', '.join(suites) or '(none)'}. See `amago list envs`."
            )
            raise UnknownComponentError(msg)
        task = typed[len(best) + 1 :] or None
        return best, task


def _guess_env_id(typed: str, suites: list[str]) -> str:
    """' Did you mean 'tmaze-passive'?' for 'tmazee-passive': the suite part is compared, the task kept."""
    tokens = typed.replace("_", "-").split("-")
    best: tuple[float, str] | None = None
    for suite in suites:
        width = suite.count("-") + 1
        typed_suite = "-".join(tokens[:width]).lower()
        score = difflib.SequenceMatcher(None, typed_suite, suite).ratio()
        if score >= 0.6 and (best is None or score > best[0]):
            rest = "-".join(tokens[width:])
            best = (score, f"{suite}-{rest}" if rest else suite)
    return f" Did you mean {best[1]!r}?" if best else ""


_default: Registries | None = None
_default_lock = threading.Lock()


def registries() -> Registries:
    """The process-wide registries (scanned once; :func:`reset_registries` rescans)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Registries()
        return _default


def reset_registries() -> None:
    """Forgets the scanned registries, e.g. after installing a plugin or changing the AMAGO_* switches.

    Components registered by this process are kept (they live in a table of the process, not in a scan).
    """
    global _default
    with _default_lock:
        _default = None
