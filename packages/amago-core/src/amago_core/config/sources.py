"""Config sources and their precedence.

Highest first: ``-o key=value`` overrides > CLI flags > ``-c`` files (later files win) > ``AMAGO_*``
environment variables > defaults. Sources are merged as plain dicts, then validated once, so an error
names the field wherever its value came from.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amago_core.config.experiment import SLOT_KEYS, ExperimentConfig, installed_default
from amago_core.file_format import PROVENANCE_KEY, RefusedStateError, migrated_config
from amago_core.io import nests_deeper_than
from amago_core.plugins.registry import Registries

# Merging tables is the plugin API's rule (presets merge the same way); these names stay importable from here.
from amago_core.plugins.tables import COMPONENT_KEYS, ENV_KEY, deep_merge, slot_kind

ENV_PREFIX = "AMAGO_"
ENV_NESTING = "__"

# Names AMAGO users already have in their shells (seeds: "Track the Results").
ENV_ALIASES = {
    "AMAGO_WANDB_PROJECT": ("logging", "wandb_project"),
    "AMAGO_WANDB_ENTITY": ("logging", "wandb_entity"),
}


RUN_RECORD_NAME = "config.resolved.json"
"""The file a run writes into its folder (what `--resume` reads, what `-c` reproduces a run from)."""

FOLDER_OWNED_SETTINGS: tuple[tuple[str, str], ...] = (
    ("run", "ckpt_base_dir"),
    ("run", "name"),
    ("replay", "dset_root"),
    ("replay", "dset_name"),
    ("ray", "address"),
    ("logging", "log_to_wandb"),
    ("logging", "wandb_project"),
    ("logging", "wandb_entity"),
)
"""Settings a run folder's record never decides: where a run writes and deletes (its folder, its buffer) and what
it connects to (the Ray cluster it joins, the wandb account and project it sends metrics to). Read from a run
record they are dropped; a user who wants them passes them again."""

MAX_CONFIG_DEPTH = 64
"""Deepest nesting of tables and lists a config source may have (the deepest real config is about 4)."""


class ConfigSourceError(ValueError):
    """A config file, override or environment variable that cannot be read; the message says which."""


def _check_depth(data: Any, source: str) -> None:
    """Raises ConfigSourceError when ``data`` nests deeper than :data:`MAX_CONFIG_DEPTH` (walked without
    recursion, so that a hostile file cannot exhaust the stack here either)."""
    if nests_deeper_than(data, MAX_CONFIG_DEPTH):
        msg = f"{source} nests tables or lists more than {MAX_CONFIG_DEPTH} levels deep; no config does, fix the file"
        raise ConfigSourceError(msg)


def parse_value(text: str) -> Any:
    """Parses an override's value: JSON when it is JSON (numbers, true/false/null, lists, tables), else a string."""
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    except RecursionError:
        msg = f"value {_clip(stripped)!r} nests more deeply than Python can parse; no config value does"
        raise ConfigSourceError(msg) from None
    lowered = stripped.lower()
    if lowered in {"true", "false"}:  # TOML / Python spellings too
        return lowered == "true"
    if lowered in {"none", "null", "~"}:
        return None
    return stripped


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _set_path(target: dict[str, Any], path: list[str], value: Any, source: str) -> None:
    _check_depth(value, source)
    node = target
    for part in path[:-1]:
        child = node.get(part)
        if isinstance(child, str) and part in COMPONENT_KEYS:  # a slot named so far gains options
            child = {"id" if part == ENV_KEY else "kind": child}
        if child is None:
            child = {}
        if not isinstance(child, dict):
            msg = f"{source}: cannot set {'.'.join(path)} because {part} is already set to {child!r}"
            raise ConfigSourceError(msg)
        node[part] = child
        node = child
    node[path[-1]] = value


def is_set(tree: Mapping[str, Any], section: str, key: str) -> bool:
    """Whether the merged config tree ``tree`` sets ``section.key`` (what a user set is kept by sizing and by
    presets following the env)."""
    table = tree.get(section)
    return isinstance(table, Mapping) and key in table


def is_run_record(path: str | os.PathLike[str], data: Mapping[str, Any]) -> bool:
    """Whether a config file is a run folder's record rather than a config a person wrote: it is called
    ``config.resolved.json``, or it carries the ``_provenance`` section that only a run writes."""
    return Path(path).name == RUN_RECORD_NAME or PROVENANCE_KEY in data


def folder_owned_settings(data: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`FOLDER_OWNED_SETTINGS` a config tree sets (dotted key -> value; unset, null and false ones,
    which ask for nothing, left out)."""
    return {
        f"{section}.{key}": data[section][key]
        for section, key in FOLDER_OWNED_SETTINGS
        if isinstance(data.get(section), Mapping) and data[section].get(key) not in (None, False)
    }


def without_folder_owned(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its :data:`FOLDER_OWNED_SETTINGS` removed (in place; the tables are changed), returned."""
    for section, key in FOLDER_OWNED_SETTINGS:
        table = data.get(section)
        if isinstance(table, dict):
            table.pop(key, None)
    return data


def read_raw_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A config file's table as written, ``_provenance`` and folder-owned settings included (see
    :func:`read_config_file` for what a run uses).

    Raises:
        ConfigSourceError: missing file, unknown extension, a parse error (with file and position), or nesting
            deeper than :data:`MAX_CONFIG_DEPTH`.
    """
    file = Path(path)
    where = f"config file {str(file)!r}"
    if not file.is_file():
        msg = f"{where} does not exist; check the path given to -c"
        raise ConfigSourceError(msg)
    suffix = file.suffix.lower()
    text = file.read_text(encoding="utf-8")
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text)
        elif suffix in {".yaml", ".yml"}:
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            msg = f"{where}: unknown format {suffix!r}; use .toml, .json or .yaml"
            raise ConfigSourceError(msg)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        msg = f"{where} is not valid {suffix[1:].upper()}: {exc}"
        raise ConfigSourceError(msg) from exc
    except RecursionError:
        # Raised from deep inside the parser; its traceback says nothing a user needs (and is huge).
        msg = f"{where} nests tables or lists more deeply than Python can parse; no config does, fix the file"
        raise ConfigSourceError(msg) from None
    except ImportError as exc:  # pragma: no cover - pyyaml is a dependency of amago-core
        msg = f"reading {str(file)!r} needs PyYAML: pip install pyyaml"
        raise ConfigSourceError(msg) from exc
    except Exception as exc:
        if type(exc).__module__.startswith("yaml"):
            msg = f"{where} is not valid YAML: {exc}"
            raise ConfigSourceError(msg) from exc
        raise
    if not isinstance(data, dict):
        msg = f"{where} must hold a table at the top level, not {type(data).__name__}"
        raise ConfigSourceError(msg)
    _check_depth(data, where)
    return data


@dataclass(frozen=True)
class SourceFile:
    """One ``-c`` file, read once: its table as written, and what a run takes from it.

    Attributes:
        path: the file.
        raw: its table as written (``_provenance`` and folder-owned settings included).
    """

    path: Path
    raw: Mapping[str, Any]

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> SourceFile:
        """Reads ``path`` (see :func:`read_raw_config_file` for the errors)."""
        return cls(Path(path), read_raw_config_file(path))

    @property
    def is_record(self) -> bool:
        """Whether it is a run folder's record (:func:`is_run_record`), not a config a person wrote."""
        return is_run_record(self.path, self.raw)

    def table(self) -> dict[str, Any]:
        """What a run takes from it: a record migrated to this amago's format (``MIGRATIONS``), without its
        ``_provenance`` and folder-owned settings; any other file as written (a fresh copy).

        Raises:
            ConfigSourceError: a record of a newer format than this amago's.
        """
        data = copy.deepcopy(dict(self.raw))
        if self.is_record:  # of the format this amago writes: an older one is migrated, a newer one refused
            try:
                data = without_folder_owned(migrated_config(data, self.path))
            except RefusedStateError as exc:
                raise ConfigSourceError(str(exc)) from exc
        data.pop(PROVENANCE_KEY, None)
        return data


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Reads a ``.toml``, ``.json`` or ``.yaml``/``.yml`` config file into a dict.

    A run folder's record (:func:`is_run_record`) is data, not instructions: its ``_provenance`` and the
    settings that choose where to write or what to connect to (:data:`FOLDER_OWNED_SETTINGS`) are dropped, so
    a shared folder cannot point a run at someone else's files or cluster. Other sources set them again.

    Raises:
        ConfigSourceError: missing file, unknown extension, a parse error (with file and position), or nesting
            deeper than :data:`MAX_CONFIG_DEPTH`.
    """
    return SourceFile.read(path).table()


def parse_override(item: str) -> dict[str, Any]:
    """``optim.learning_rate=3e-4`` -> ``{"optim": {"learning_rate": 3e-4}}``."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        msg = f"override {item!r} must look like section.field=value (e.g. optim.learning_rate=3e-4)"
        raise ConfigSourceError(msg)
    result: dict[str, Any] = {}
    source = f"override {_clip(item)!r}"
    _set_path(result, key.split("."), _parsed(raw, source), source)
    return result


def _parsed(raw: str, source: str) -> Any:
    try:
        return parse_value(raw)
    except ConfigSourceError as exc:
        raise ConfigSourceError(f"{source}: {exc}") from None


def config_from_environ(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``AMAGO_OPTIM__LEARNING_RATE=3e-4`` -> ``{"optim": {"learning_rate": 3e-4}}`` (plus the wandb aliases).

    Variables without the ``__`` separator (``AMAGO_PLUGINS``, ...) are not config and are ignored.
    """
    env = os.environ if environ is None else environ
    result: dict[str, Any] = {}
    for name, raw in sorted(env.items()):
        if name in ENV_ALIASES:
            _set_path(result, list(ENV_ALIASES[name]), raw, f"environment variable {name}")
        elif name.startswith(ENV_PREFIX) and ENV_NESTING in name:
            path = [p.lower() for p in name[len(ENV_PREFIX) :].split(ENV_NESTING)]
            source = f"environment variable {name}"
            _set_path(result, path, _parsed(raw, source), source)
    return result


def _without_unset(flags: Mapping[str, Any]) -> dict[str, Any]:
    """CLI flags left at None were not given; drop them at any depth so they override nothing."""
    kept: dict[str, Any] = {}
    for key, value in flags.items():
        if isinstance(value, Mapping):
            value = _without_unset(value)
            if value:
                kept[key] = value
        elif value is not None:
            kept[key] = value
    return kept


OPTIONS_BY_KIND_KEY = "by_kind"
"""Key of a job's (a preset's) slot table holding options for other kinds of that slot, applied only when the
run picks that kind: ``{"agent": {"kind": "agent", ..., "by_kind": {"multitask": {"output_bins": 96}}}}``."""


def _split_options_by_kind(base: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The job without its ``by_kind`` tables, and those tables per slot (kinds normalised like slot kinds)."""
    job = dict(base)
    found: dict[str, dict[str, Any]] = {}
    for slot in SLOT_KEYS:
        table = job.get(slot)
        if isinstance(table, Mapping) and OPTIONS_BY_KIND_KEY in table:
            table = dict(table)
            by_kind = table.pop(OPTIONS_BY_KIND_KEY)
            if not isinstance(by_kind, Mapping):
                msg = f"{slot}.{OPTIONS_BY_KIND_KEY} must be a table of kind -> options, got {by_kind!r}."
                raise ConfigSourceError(msg)
            # A name as given (a str) always normalises to a kind.
            found[slot] = {str(slot_kind(str(kind), slot)): dict(opts) for kind, opts in by_kind.items()}
            job[slot] = table
    return job, found


def merge_over_job(job: Mapping[str, Any], *layers: Mapping[str, Any]) -> dict[str, Any]:
    """Merges config tables (lowest first) over a job's defaults, such as an env suite's preset.

    The job's ``by_kind`` options are applied to whichever kind the layers finally chose for that slot, still
    below the layers, and never reach the result themselves.
    """
    base, options_by_kind = _split_options_by_kind(job)
    merged = functools.reduce(deep_merge, layers, dict(base))
    switched = False
    for slot, by_kind in options_by_kind.items():
        chosen = slot_kind(merged.get(slot), slot)
        if chosen in by_kind:
            own = dict(base[slot]) if slot_kind(base.get(slot), slot) == chosen else {}
            base[slot] = deep_merge(own, {"kind": chosen, **by_kind[chosen]})
            switched = True
    return functools.reduce(deep_merge, layers, dict(base)) if switched else merged


def merge_sources(
    files: Iterable[str | os.PathLike[str]] = (),
    flags: Mapping[str, Any] | None = None,
    overrides: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    base: Mapping[str, Any] | None = None,
    *,
    registries: Registries | None = None,
) -> dict[str, Any]:
    """The raw merged dict of every source, lowest precedence first (see the module docstring).

    ``base`` sits just above the built-in defaults (below the environment): a job's own defaults. A slot's
    default component is looked up in ``registries`` (default: the process-wide registries).
    """
    return merge_layers(read_sources(files, flags, overrides, environ), base, registries=registries)


def read_sources(
    files: Iterable[str | os.PathLike[str] | SourceFile] = (),
    flags: Mapping[str, Any] | None = None,
    overrides: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Every source as a config table, lowest precedence first: the ``AMAGO_*`` environment, each file (read
    once), the flags, each override. :func:`merge_layers` merges them over a base layer.

    Raises:
        ConfigSourceError: a source cannot be read.
    """
    tables = (file.table() if isinstance(file, SourceFile) else read_config_file(file) for file in files)
    layers = [config_from_environ(environ), *tables]
    if flags:
        layers.append(_without_unset(flags))
    layers.extend(parse_override(item) for item in overrides)
    return layers


def merge_layers(
    layers: Iterable[Mapping[str, Any]],
    base: Mapping[str, Any] | None = None,
    *,
    registries: Registries | None = None,
) -> dict[str, Any]:
    """``layers`` (from :func:`read_sources`) merged over ``base``; options given for a slot without a kind name
    the slot's default component (the default of ``registries``, else of the process-wide registries)."""
    merged = merge_over_job(base or {}, *layers)
    for key in SLOT_KEYS:  # options given for the default component: name that default
        value = merged.get(key)
        if key != ENV_KEY and isinstance(value, Mapping) and not ({"kind", "id"} & set(value)):
            merged[key] = {"kind": installed_default(key, registries), **value}
    return merged


def load_config(
    files: Iterable[str | os.PathLike[str]] = (),
    flags: Mapping[str, Any] | None = None,
    overrides: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    base: Mapping[str, Any] | None = None,
    *,
    registries: Registries | None = None,
) -> ExperimentConfig:
    """Merges every source and validates the result.

    Args:
        files: ``-c`` files, in order (later wins).
        flags: CLI flags already mapped to config keys (``{"traj_encoder": "mamba"}``); None values are unset.
        overrides: ``-o`` items, ``section.field=value``.
        environ: the environment to read ``AMAGO_*`` from (default: ``os.environ``).
        base: defaults of a job, above the built-in defaults and below everything else.
        registries: where component names are looked up (default: the process-wide registries).

    Raises:
        ConfigSourceError: a source cannot be read.
        pydantic.ValidationError: the merged config is invalid (located at the bad field).
    """
    merged = merge_sources(files, flags, overrides, environ, base, registries=registries)
    return ExperimentConfig.validate_with(merged, registries)
