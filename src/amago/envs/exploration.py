"""AMAGO's ``amago.envs.exploration``: the exploration wrappers (amago-envs).

Choose one with ``Experiment(exploration_wrapper_type="egreedy")`` (or the class, or a table with options such
as ``{"kind": "egreedy", "steps_anneal": 200_000}``); ``-o exploration.steps_anneal=200000`` on the CLI.
"""

from __future__ import annotations

from amago._compat import shim_exports
from amago._registries import EXPLORATION_POINTERS, EXPLORATION_REGISTRY

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "EpsilonGreedy": "amago_envs.exploration.wrappers:EpsilonGreedy",
        "BilevelEpsilonGreedy": "amago_envs.exploration.wrappers:BilevelEpsilonGreedy",
        **EXPLORATION_REGISTRY,
    },
    no_counterpart=EXPLORATION_POINTERS,
)
