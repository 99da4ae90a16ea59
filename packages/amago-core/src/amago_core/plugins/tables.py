"""Config tables as plain dicts: which keys name a component, and how two tables merge.

An env suite's presets (:meth:`ComponentSpec.preset_for`) and the experiment config's sources
(:mod:`amago_core.config.sources`) merge the same way, so the rule lives here, in the plugin API, below both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amago_core.plugins.groups import ENV_SUITES, GROUPS

COMPONENT_KEYS = tuple(group.key for group in GROUPS)
"""Keys whose value names a component (a name, or a table with ``kind``) wherever they sit in a config tree:
the top-level slots and ``replay.relabeler`` (each group's key is its slot's name). Options given for one keep
its name; another name drops them."""

ENV_KEY = ENV_SUITES.key
"""The env slot, which names its suite by an env ``id`` (``tmaze-passive``) rather than a ``kind``."""


def slot_kind(value: Any, key: str) -> str | None:
    """The kind a slot's value names (a name, or a table's ``kind`` / the env's ``id``), normalised."""
    if isinstance(value, str):
        return value.replace("-", "_").lower()
    if isinstance(value, Mapping):
        marker = value.get("id" if key == ENV_KEY and "id" in value else "kind")
        return marker.replace("-", "_").lower() if isinstance(marker, str) else None
    return None


def deep_merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """Merges ``update`` into a copy of ``base``; tables merge key by key, anything else replaces.

    A component slot switched to another kind drops the old kind's options instead of mixing them in.
    """
    merged = dict(base)
    for key, new in update.items():
        old = merged.get(key)
        marker = "id" if key == ENV_KEY else "kind"
        if (
            key in COMPONENT_KEYS
            and isinstance(new, str)
            and isinstance(old, Mapping)
            and not {"id", "kind"} & set(old)
        ):
            merged[key] = {marker: new, **old}  # options given before the choice (a preset): keep them
        elif (
            key in COMPONENT_KEYS
            and old is not None
            and slot_kind(new, key) not in (None, slot_kind(old, key))
        ):
            merged[key] = new if not isinstance(new, Mapping) else dict(new)
        elif key in COMPONENT_KEYS and isinstance(new, str) and isinstance(old, Mapping):
            merged[key] = old  # same kind named again: keep the options already given
        elif isinstance(old, Mapping) and isinstance(new, Mapping):
            merged[key] = deep_merge(dict(old), new)
        elif key in COMPONENT_KEYS and isinstance(old, str) and isinstance(new, Mapping):
            merged[key] = {marker: old, **new}
        else:
            merged[key] = dict(new) if isinstance(new, Mapping) else new
    return merged
