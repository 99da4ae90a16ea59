"""AMAGO's ``amago.envs.exploration``: the exploration wrappers (amago-envs) with AMAGO's constructors.

``EpsilonGreedy(env, eps_start, eps_end, steps_anneal, randomize_eps)`` and ``BilevelEpsilonGreedy(env,
rollout_horizon, ...)`` take AMAGO's arguments, and a subclass overriding ``current_eps(local_step)`` works as in
AMAGO (:mod:`amago.from_amago.exploration`). Choose one with ``Experiment(exploration_wrapper_type="egreedy")``
(or the class, a subclass, or a table with options such as ``{"kind": "egreedy", "steps_anneal": 200_000}``);
``-o exploration.steps_anneal=200000`` on the CLI.
"""

from __future__ import annotations

from amago._compat import shim_exports
from amago._registries import EXPLORATION_CLASSES, EXPLORATION_REGISTRY

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "EpsilonGreedy": "amago.from_amago.exploration:EpsilonGreedy",
        "BilevelEpsilonGreedy": "amago.from_amago.exploration:BilevelEpsilonGreedy",
        **EXPLORATION_REGISTRY,
        **EXPLORATION_CLASSES,
    },
)
