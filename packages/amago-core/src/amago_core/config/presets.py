"""Env-suite presets: the hyperparameters an example used for a task, applied when `--env` picks that task.

A suite declares them torch-free in its spec::

    ComponentSpec(..., extra={"tasks": [...], "presets": {"*": {...}, "ml45": {...}}})

``"*"`` applies to every task without its own entry. A preset is a config table (sections and slots, like a
``-c`` file) and sits below every other source, so anything the user sets wins. A slot table may carry a
``by_kind`` table of options for other kinds of that slot, applied only when the run picks that kind (see
:func:`slot_with_alternative`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amago_core.config.sources import OPTIONS_BY_KIND_KEY, deep_merge

ANY_TASK = "*"


def slot_with_alternative(
    kind: str, options: Mapping[str, Any], *, alternative: str, alternative_options: Mapping[str, Any]
) -> dict[str, Any]:
    """A preset's slot table for ``kind`` that still applies when a run picks ``alternative`` instead.

    ``options`` go to either kind; ``alternative_options`` only to ``alternative``. Example: an example's
    agent settings, plus the two-hot value bins AMAGO set for the ``multitask`` agent's critic::

        "agent": slot_with_alternative("agent", {"reward_multiplier": 1.0}, alternative="multitask",
                                       alternative_options={"output_bins": 96})
    """
    return {
        "kind": kind,
        **options,
        OPTIONS_BY_KIND_KEY: {alternative: {**options, **alternative_options}},
    }


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
