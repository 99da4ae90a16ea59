"""Env-suite presets: the hyperparameters an example used for a task, applied when `--env` picks that task.

A suite declares them torch-free in its spec (``ComponentSpec(..., presets={"*": {...}, "ml45": {...}})``;
``"*"`` applies to every task without its own entry). A preset is a config table (like a ``-c`` file) and sits
below every other source, so anything the user sets wins. A slot table may carry a ``by_kind`` table of options
for other kinds of that slot, applied only when the run picks that kind (see :func:`slot_with_alternative`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from amago_core.config.slots import _or_installed
from amago_core.config.sources import OPTIONS_BY_KIND_KEY

if TYPE_CHECKING:
    from amago_core.plugins.registry import Registries


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


def suite_and_task(
    env_choice: str | Mapping[str, Any], registries: Registries | None = None
) -> tuple[str, str | None]:
    """The suite name and task an env id (``metaworld-ml45``) or env table (``{"id": ...}``, ``{"kind": ...}``) names.

    Args:
        env_choice: the env id or table.
        registries: where the suites are looked up (default: the process-wide registries).

    Raises:
        amago_core.plugins.PluginError: no installed suite matches the id.
    """
    regs = _or_installed(registries)
    if isinstance(env_choice, str):
        return regs.resolve_env_id(env_choice)
    if "id" in env_choice:
        return regs.resolve_env_id(str(env_choice["id"]))
    task = env_choice.get("task")
    return regs.env_suites.resolve(str(env_choice.get("kind"))), None if task is None else str(task)


def preset_for_env(
    env_choice: str | Mapping[str, Any], registries: Registries | None = None
) -> dict[str, Any] | None:
    """The preset for an env id (``metaworld-ml45``) or env table (``{"id": ...}`` / ``{"kind": ..., "task": ...}``).

    Args:
        env_choice: the env id or table.
        registries: where the suites are looked up (default: the process-wide registries).

    Raises:
        amago_core.plugins.PluginError: the suite is unknown or broken, or its preset is malformed.
    """
    regs = _or_installed(registries)
    suite, task = suite_and_task(env_choice, regs)
    return regs.env_suites.spec(suite).preset_for(task) or None
