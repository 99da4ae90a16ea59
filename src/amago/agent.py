"""AMAGO's ``amago.agent``: the learning updates (amago-agents) under AMAGO's names.

``Agent`` and ``MultiTaskAgent`` take their hyperparameters from a config (``AgentConfig``), not keyword
arguments: choose one with ``Experiment(agent_type=MultiTaskAgent)`` (or ``"multitask"``, or a table such as
``{"kind": "multitask", "gamma": 0.99}``) and set options with ``-o agent.gamma=0.99``.
"""

from __future__ import annotations

from amago._compat import shim_exports
from amago._registries import AGENT_REGISTRY

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "BaseAgent": "amago_agents.base:BaseAgent",
        "Agent": "amago_agents.agent:Agent",
        "MultiTaskAgent": "amago_agents.multitask:MultiTaskAgent",
        "binary_filter": "amago_agents.filters:binary_filter",
        "exp_filter": "amago.from_amago.filters:exp_filter",
        "leaky_relu_filter": "amago_agents.filters:leaky_relu_filter",
        **AGENT_REGISTRY,
    },
    no_counterpart={
        "nstep_return": "n-step targets are the agent option n_step (-o agent.n_step=3); the function is "
        "amago_agents.returns.nstep_targets",
    },
    standins={
        "Multigammas": "the extra discount factors are the agent options multigammas (one list for discrete "
        "and continuous actions) and use_multigamma, e.g. -o 'agent.multigammas=[0.9, 0.99]'",
    },
)
