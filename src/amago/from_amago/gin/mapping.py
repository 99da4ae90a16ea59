"""AMAGO v3.3.0's gin configurables and what each parameter became in amago: the one mapping, kept as data.

:data:`CONFIGURABLES` lists every ``@gin.configurable`` class and function of AMAGO v3.3.0 with each of its
parameters (:class:`~amago.from_amago.gin.model.GinBinding`: the amago config key a binding of it sets, or why
there is none), and :data:`REGISTRATIONS` AMAGO's shortcut-name registries. Everything that reads AMAGO's gin
reads this table:

- :func:`~amago.from_amago.gin.migration.migrate` translates a parsed gin file into amago settings, which
  ``amago migrate-gin FILE.gin`` prints as ``-o key=value`` lines or a TOML config, with one line on stderr per
  binding it cannot translate;
- ``amago import-amago`` (:mod:`amago.from_amago.gin_config`) takes the networks' options of a run's
  ``config.txt`` through it;
- :func:`~amago.from_amago.gin.reference.gin_reference` renders the tables of ``docs/migration-from-amago.md``
  (``amago migrate-gin --update`` rewrites the page's generated block);
- ``tests/compat/test_gin_mapping.py`` checks that every key named here exists in amago's config and that the
  list covers AMAGO's configurables and parameters exactly (against a list AMAGO's own interpreter recorded).

How a configurable's options reach amago: most AMAGO classes became one component of a slot (``TformerTrajEncoder``
is the ``transformer`` trajectory encoder) or one choice inside a component (``FlashAttention`` is
``traj_encoder.attention = "flash"``). Those settings are the configurable's *picks*, outermost first. A binding of
one of its parameters is translated together with its picks, so ``TformerTrajEncoder.n_layers = 4`` becomes
``traj_encoder.kind=transformer`` and ``traj_encoder.n_layers=4``: the lines mean the same whatever preset lies
underneath. The tables themselves are :mod:`.table_nets` and :mod:`.table_agents`. Standard library only.
"""

from __future__ import annotations

from amago.from_amago.gin.model import GinBinding, GinConfigurable, PickKey, Registration
from amago.from_amago.gin.table_agents import AGENTS
from amago.from_amago.gin.table_examples import EXAMPLES
from amago.from_amago.gin.table_nets import NETS

CONFIGURABLES: tuple[GinConfigurable, ...] = NETS + AGENTS
"""Every gin configurable of AMAGO v3.3.0, in the order of its modules, with each parameter's counterpart."""

EXAMPLE_CONFIGURABLES: tuple[GinConfigurable, ...] = EXAMPLES
"""The configurable classes of AMAGO's example scripts that have a counterpart (``TMazeExploration``)."""

ALL_CONFIGURABLES: tuple[GinConfigurable, ...] = CONFIGURABLES + EXAMPLE_CONFIGURABLES
"""What a gin file's bindings are looked up in: AMAGO's configurables, then its examples'."""

PICK_KEYS: dict[str, PickKey] = {
    "tstep_encoder.kind": PickKey(None, "Experiment.tstep_encoder_type"),
    "traj_encoder.kind": PickKey(None, "Experiment.traj_encoder_type"),
    "agent.kind": PickKey(None, "Experiment.agent_type"),
    "exploration.kind": PickKey(None, "Experiment.exploration_wrapper_type"),
    "env.kind": PickKey(None, None),
    "optim.optimizer": PickKey(None, None),
    "agent.actor.type": PickKey("plain", "Agent.actor_type"),
    "agent.fbc_filter.type": PickKey("binary", "Agent.fbc_filter_func"),
    "agent.continuous_dist.type": PickKey("tanh_gaussian", "Actor.continuous_dist_type"),
    "agent.discrete_dist.type": PickKey("discrete", "Actor.discrete_dist_type"),
    "agent.discrete_like_continuous": PickKey(True, None),
    "tstep_encoder.cnn_type": PickKey("nature", "CNNTstepEncoder.cnn_type"),
    "tstep_encoder.normalize_inputs": PickKey(True, "FFTstepEncoder.normalize_inputs"),
    "traj_encoder.attention": PickKey("flash", "TformerTrajEncoder.attention_type"),
    "traj_encoder.pos_emb": PickKey("fixed", "TformerTrajEncoder.pos_emb"),
    "traj_encoder.sigma_reparam": PickKey(True, "TformerTrajEncoder.sigma_reparam"),
}
"""Every key a configurable's picks name, with AMAGO's default for it."""

REGISTRATIONS: tuple[Registration, ...] = tuple(
    Registration(path, f"in-script registration: `{path}` (same call)")
    for path in (
        "amago.agent.register_agent",
        "amago.envs.exploration.register_exploration",
        "amago.nets.traj_encoders.register_traj_encoder",
        "amago.nets.tstep_encoders.register_tstep_encoder",
    )
)
"""AMAGO's shortcut-name registries: a class decorated with one and with ``@gin.configurable`` (as their docstrings
show) is a configurable of the script's own."""

GIN_MAPPING: tuple[GinBinding, ...] = tuple(
    row for configurable in CONFIGURABLES for row in configurable.parameters
)
"""Every parameter of every configurable, as one flat table."""

BY_NAME: dict[str, GinConfigurable] = {configurable.name: configurable for configurable in ALL_CONFIGURABLES}
"""The configurables (AMAGO's and its examples') by their short name (``TformerTrajEncoder``)."""


def ancestors(configurable: GinConfigurable) -> list[GinConfigurable]:
    """The configurables ``configurable`` subclasses, nearest first (``TMazeExploration``: ``EpsilonGreedy``,
    ``BilevelEpsilonGreedy``)."""
    found: list[GinConfigurable] = []
    base = configurable.base
    while base is not None:
        found.append(BY_NAME[base])
        base = BY_NAME[base].base
    return found


def passed_by(subclass: GinConfigurable, ancestor: GinConfigurable, parameter: str) -> GinConfigurable | None:
    """The class from ``subclass`` down to ``ancestor`` that passes ``ancestor``'s ``parameter`` on to its base itself,
    so that gin's binding of ``ancestor.parameter`` has no effect on ``subclass``; None when none of them does (gin
    then applies the binding to ``subclass`` too).

    A class can pass only a parameter its base takes: ``TMazeExploration`` cannot pass ``BilevelEpsilonGreedy``'s
    ``eps_start_start`` (``EpsilonGreedy`` does).
    """
    current = subclass
    while current is not ancestor and current.base is not None:
        base = BY_NAME[current.base]
        if base.parameter(parameter) is not None and parameter not in current.inherits:
            return current
        current = base
    return None


def lookup(name: str) -> GinConfigurable | None:
    """The configurable a gin file means by ``name`` (``Agent``, or a module path ending in AMAGO's)."""
    configurable = BY_NAME.get(name.rpartition(".")[2])
    if configurable is None:
        return None
    if name == configurable.name or configurable.path == name or configurable.path.endswith(f".{name}"):
        return configurable
    return None
