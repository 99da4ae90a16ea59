"""Env-suite presets: the hyperparameters an example used for a task, applied when `--env` picks that task.

A suite declares them torch-free in its spec::

    ComponentSpec(..., extra={"tasks": [...], "presets": {"*": {...}, "ml45": {...}}})

``"*"`` applies to every task without its own entry. A preset is a config table (sections and slots, like a
``-c`` file) and sits below every other source, so anything the user sets wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amago_core.config.sources import deep_merge

ANY_TASK = "*"


def preset_for_env(env_choice: str | Mapping[str, Any]) -> dict[str, Any] | None:
    """The preset for an env id (``metaworld-ml45``) or env table (``{"id": ...}`` / ``{"kind": ..., "task": ...}``).

    Raises:
        amago_core.plugins.PluginError: the suite is unknown or broken.
    """
    from amago_core.plugins.registry import registries

    regs = registries()
    if isinstance(env_choice, str):
        suite, task = regs.resolve_env_id(env_choice)
    elif "id" in env_choice:
        suite, task = regs.resolve_env_id(str(env_choice["id"]))
    else:
        suite, task = str(env_choice.get("kind")), env_choice.get("task")
    spec = regs.env_suites.spec(suite)
    presets: Mapping[str, Any] = spec.extra.get("presets", {})
    if not presets:
        return None
    chosen = task if task is not None else spec.extra.get("default_task")
    preset = (
        deep_merge(dict(presets.get(ANY_TASK, {})), presets.get(chosen, {}))
        if chosen
        else dict(presets.get(ANY_TASK, {}))
    )
    return preset or None
