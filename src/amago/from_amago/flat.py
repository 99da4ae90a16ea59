"""AMAGO's flat ``Experiment`` keyword arguments, mapped onto the config tree by one table (``amago.Experiment``'s).

``amago.Experiment(learning_rate=3e-4, traj_encoder_type="mamba")`` is ``-o optim.learning_rate=3e-4
--traj-encoder mamba`` on the command line: both become the same :class:`ExperimentConfig`. Every section field
is reachable by its own name (``batch_size`` -> ``optim.batch_size``); :data:`AMAGO_NAMES` adds AMAGO's
spellings that differ from the config's. Nothing here holds a default: those live in the config models only.
amago-core never reads a flat name: its ``Experiment`` takes a plan or a config.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from amago_core.config.component import ComponentConfig
from amago_core.config.components import UserClass
from amago_core.config.experiment import SLOT_KEYS, ExperimentConfig
from amago_core.config.resolve import RunPlan, plan_run
from amago_core.config.sources import deep_merge
from amago_core.plugins.registry import Registries
from amago_core.suggest import did_you_mean

AMAGO_NAMES: dict[str, str] = {
    "run_name": "run.name",
    "tstep_encoder_type": "tstep_encoder",
    "traj_encoder_type": "traj_encoder",
    "agent_type": "agent",
    "exploration_wrapper_type": "exploration",
    "sample_actions": "rollout.sample_actions_val",
    "critic_loss_weight": "agent.critic_loss_weight",
    "env": "env",
}
"""AMAGO's names whose config path is not ``<section>.<same name>``. ``critic_loss_weight`` is an option of
the agent slot: it reaches whichever agent the run uses, and an agent without it refuses it by name."""

SLOT_NAMES: dict[str, str] = {name: path for name, path in AMAGO_NAMES.items() if path in SLOT_KEYS}
"""Flat names that choose a whole component (a name, a table, a config, or in Python a class)."""


class FlatNameError(TypeError):
    """A keyword argument that is no setting of the experiment (with the closest one)."""


@functools.cache
def flat_names() -> dict[str, tuple[str, ...]]:
    """Every flat name -> its path in the config tree (``learning_rate`` -> ``("optim", "learning_rate")``).

    Raises:
        RuntimeError: two sections share a field name, so the name alone would be ambiguous (a bug in amago).
    """
    table: dict[str, tuple[str, ...]] = {}
    for section, field in ExperimentConfig.model_fields.items():
        annotation = field.annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            continue
        for name in annotation.model_fields:
            if name in table:
                msg = (
                    f"config fields {'.'.join(table[name])} and {section}.{name} share the flat name {name!r}"
                )
                raise RuntimeError(msg)
            table[name] = (section, name)
    for name, path in AMAGO_NAMES.items():
        table[name] = tuple(path.split("."))
    return table


def path_of(name: str) -> tuple[str, ...]:
    """The config path of a flat name.

    Raises:
        FlatNameError: the name is no setting; the message suggests the closest one.
    """
    table = flat_names()
    if name not in table:
        msg = (
            f"Experiment got an unknown setting {name!r}.{did_you_mean(name, table)} Settings are AMAGO's "
            "Experiment parameters and the config fields by name (see `amago config schema`)."
        )
        raise FlatNameError(msg)
    return table[name]


def flat_to_tree(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``{"learning_rate": 3e-4, "run_name": "x"}`` -> ``{"optim": {"learning_rate": 3e-4}, "run": {"name": "x"}}``.

    Raises:
        FlatNameError: an unknown name.
    """
    tree: dict[str, Any] = {}
    for name, value in settings.items():
        path = path_of(name)
        node = tree
        for part in path[:-1]:
            child = node.get(part)
            if isinstance(
                child, str
            ):  # a slot chosen by name gains an option (agent_type + critic_loss_weight)
                child = {"id" if part == "env" else "kind": child}
            node[part] = child = child if isinstance(child, dict) else {}
            node = child
        last = path[-1]
        if last in SLOT_KEYS and isinstance(value, str) and isinstance(node.get(last), dict):
            node[last] = {**node[last], "id" if last == "env" else "kind": value}  # options given first
        else:
            node[last] = value
    return tree


def flat_value(config: ExperimentConfig, name: str) -> Any:
    """The value a flat name has in ``config`` (``flat_value(config, "batch_size")``)."""
    value: Any = config
    for part in path_of(name):
        value = value[part] if isinstance(value, Mapping) else getattr(value, part)
    return value


def with_settings(
    config: ExperimentConfig, settings: Mapping[str, Any], *, registries: Registries | None = None
) -> ExperimentConfig:
    """A copy of ``config`` with flat ``settings`` applied over it, validated again.

    Args:
        config: the config to change.
        settings: flat names (``learning_rate``) and their values.
        registries: where component names are looked up (default: the process-wide registries).

    Raises:
        FlatNameError: an unknown name.
        pydantic.ValidationError: a value the config refuses (located at its config path).
    """
    if not settings:
        return config
    merged = deep_merge(config.model_dump(mode="json", exclude_unset=False), flat_to_tree(settings))
    return ExperimentConfig.validate_with(merged, registries)


def is_python_component(value: Any) -> bool:
    """A class or factory given for a component slot (as opposed to a name, a table or a config)."""
    return callable(value) and not isinstance(value, str | Mapping | ComponentConfig)


def take_component_classes(settings: dict[str, Any]) -> dict[str, UserClass]:
    """Removes the classes given for component slots (``traj_encoder_type=MyEncoder``) from ``settings``;
    returns them by slot (``traj_encoder``)."""
    return {
        SLOT_NAMES[key]: settings.pop(key)
        for key in list(settings)
        if key in SLOT_NAMES and is_python_component(settings[key])
    }


def flat_config(
    config: RunPlan | ExperimentConfig | Mapping[str, Any] | None,
    settings: Mapping[str, Any],
    registries: Registries,
) -> RunPlan | ExperimentConfig | Mapping[str, Any]:
    """What core's ``Experiment`` is given for ``amago.Experiment(config, **settings)``: the flat keywords over
    ``config`` (validated against ``registries``), ``config`` itself without keywords, or, without a config, the
    plan the CLI would make of the keywords (suite preset under them, ``AMAGO_*`` variables).

    Raises:
        FlatNameError: an unknown name.
        pydantic.ValidationError: a value the config refuses (located at its config path).
    """
    if config is None:
        return plan_run(flags=flat_to_tree(settings), registries=registries)
    if not settings:
        return config
    plain = config.config if isinstance(config, RunPlan) else config
    base = plain if isinstance(plain, ExperimentConfig) else ExperimentConfig.validate_with(plain, registries)
    return with_settings(base, settings, registries=registries)
