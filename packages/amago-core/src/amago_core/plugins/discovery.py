"""Reads plugin entry points from installed metadata and applies the AMAGO_* plugin switches.

Nothing here imports a plugin: listing costs one scan of the installed distributions' metadata.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

META_DISTRIBUTION = "amago"
"""The meta-package: it and what it requires are amago's own distributions."""


def builtin_distributions() -> frozenset[str]:
    """amago's own distributions: amago-core, the ``amago`` meta-package and what it requires (amago-nets,
    amago-agents, amago-envs), read from the installed metadata. The plugin switches never turn these off
    (except an explicit block)."""
    names = {"amago-core", META_DISTRIBUTION}
    try:
        requirements = metadata.requires(META_DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        requirements = []
    for requirement in requirements:
        if "extra ==" not in requirement:  # the meta-package's own requirements, not its forwarded extras
            names.add(normalize_distribution(re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0]))
    return frozenset(names)


HOOKS_ENTRY_POINT_GROUP = "amago"
"""pluggy hook implementations (log backends, callbacks, CLI commands) register under this group."""

ENV_DISABLE_AUTOLOAD = "AMAGO_DISABLE_PLUGIN_AUTOLOAD"
ENV_ALLOW = "AMAGO_PLUGINS"
ENV_BLOCK = "AMAGO_BLOCK_PLUGINS"

_TRUTHY = {"1", "true", "yes", "on"}


def normalize_distribution(name: str) -> str:
    """PEP 503 normalisation: ``Amago_Plugin.LSTM`` -> ``amago-plugin-lstm``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _split_names(raw: str | None) -> frozenset[str]:
    if not raw:
        return frozenset()
    return frozenset(normalize_distribution(n) for n in re.split(r"[,\s]+", raw) if n.strip())


@dataclass(frozen=True)
class PluginSwitches:
    """Which distributions may contribute plugins, from the environment.

    - ``AMAGO_DISABLE_PLUGIN_AUTOLOAD=1``: third-party distributions load only if ``AMAGO_PLUGINS`` names
      them; amago's own distributions always load.
    - ``AMAGO_PLUGINS=dist-a,dist-b``: allow-list of third-party distributions (the rest are skipped).
    - ``AMAGO_BLOCK_PLUGINS=dist-c``: never load these distributions (built-ins included: an explicit
      block wins, e.g. to replace a built-in with a plugin of the same name).
    """

    autoload: bool = True
    allow: frozenset[str] | None = None
    block: frozenset[str] = frozenset()
    builtins: frozenset[str] = field(default_factory=builtin_distributions)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> PluginSwitches:
        env = os.environ if environ is None else environ
        autoload = env.get(ENV_DISABLE_AUTOLOAD, "").strip().lower() not in _TRUTHY
        allow_raw = env.get(ENV_ALLOW)
        allow = _split_names(allow_raw) if allow_raw is not None else None
        return cls(autoload=autoload, allow=allow, block=_split_names(env.get(ENV_BLOCK)))

    def skip_reason(self, distribution: str) -> str | None:
        """Why this distribution's plugins are skipped, or None when they load."""
        dist = normalize_distribution(distribution)
        if dist in self.block:
            return f"blocked by {ENV_BLOCK}"
        if dist in self.builtins:
            return None
        if self.allow is not None and dist not in self.allow:
            return f"not in {ENV_ALLOW}"
        if not self.autoload and self.allow is None:
            return f"{ENV_DISABLE_AUTOLOAD} is set"
        return None

    def describe(self) -> str:
        """One line for `amago plugins` / `amago doctor` saying which switches are in force."""
        parts = []
        if not self.autoload:
            parts.append(f"{ENV_DISABLE_AUTOLOAD}=1")
        if self.allow is not None:
            parts.append(f"{ENV_ALLOW}={','.join(sorted(self.allow)) or '(empty)'}")
        if self.block:
            parts.append(f"{ENV_BLOCK}={','.join(sorted(self.block))}")
        return ", ".join(parts) if parts else "all installed plugins load"


@dataclass(frozen=True)
class EntryRecord:
    """One entry point, read from metadata only.

    Attributes:
        name: the entry name (``transformer``, or an alias such as ``gru``).
        group: the entry-point group.
        value: ``module:attribute`` the entry points at.
        distribution: the installing distribution's normalised name.
        version: that distribution's version.
        skip_reason: why the plugin switches skip it, or None when it is active.
    """

    name: str
    group: str
    value: str
    distribution: str
    version: str
    skip_reason: str | None = None

    def load(self) -> object:
        """Imports the module the entry points at and returns the named attribute."""
        return metadata.EntryPoint(name=self.name, value=self.value, group=self.group).load()

    @property
    def origin(self) -> str:
        """``distribution version`` for messages."""
        return f"{self.distribution} {self.version}"


def scan_entry_points(groups: set[str], switches: PluginSwitches) -> dict[str, list[EntryRecord]]:
    """Reads every entry point of ``groups`` from installed metadata (one pass over distributions).

    Only distributions whose ``entry_points.txt`` mentions one of the groups have their METADATA parsed:
    parsing every installed distribution's METADATA would dominate the CLI's start-up.
    """
    found: dict[str, list[EntryRecord]] = {g: [] for g in groups}
    seen: set[tuple[str, str, str]] = set()
    markers = tuple(f"[{g}]" for g in groups)
    for dist in metadata.distributions():
        text = dist.read_text("entry_points.txt")
        if not text or not any(marker in text for marker in markers):
            continue
        try:
            dist_name = normalize_distribution(dist.metadata["Name"] or "")
        except (KeyError, TypeError):
            continue
        if not dist_name:
            continue
        for ep in dist.entry_points:
            if ep.group not in groups:
                continue
            key = (dist_name, ep.group, ep.name)
            if key in seen:  # one distribution visible twice on sys.path: the first wins, as for imports
                continue
            seen.add(key)
            found[ep.group].append(
                EntryRecord(
                    name=ep.name,
                    group=ep.group,
                    value=ep.value,
                    distribution=dist_name,
                    version=dist.version,
                    skip_reason=switches.skip_reason(dist_name),
                )
            )
    return found
