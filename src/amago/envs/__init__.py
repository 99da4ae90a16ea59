"""AMAGO's ``amago.envs``: the env wrapper and exploration (amago-core's rollout contract, amago-envs).

``from amago.envs import AMAGOEnv, AMAGO_ENV_LOG_PREFIX`` works as in AMAGO; so do the submodules
``amago.envs.amago_env``, ``amago.envs.exploration`` and ``amago.envs.builtin``. Everything ``amago_envs``
exports is here too.
"""

from __future__ import annotations

from amago._compat import shim_exports
from amago._registries import EXPLORATION_CLASSES, EXPLORATION_REGISTRY

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "AMAGOEnv": "amago.envs.amago_env:AMAGOEnv",
        "AMAGO_ENV_LOG_PREFIX": "amago_core.rollout:AMAGO_ENV_LOG_PREFIX",
        "EnvContractError": "amago_core.rollout:EnvContractError",
        "SequenceEnv": "amago_core.rollout:SequenceEnv",
        "StepResult": "amago_core.rollout:StepResult",
        "EnvCreator": "amago_core.rollout:EnvCreator",
        "make_pool": "amago_core.rollout:make_pool",
        "EpsilonGreedy": "amago.from_amago.exploration:EpsilonGreedy",
        "BilevelEpsilonGreedy": "amago.from_amago.exploration:BilevelEpsilonGreedy",
        **EXPLORATION_REGISTRY,
        **EXPLORATION_CLASSES,
    },
    submodules={
        "amago_env": "amago.envs.amago_env",
        "exploration": "amago.envs.exploration",
        "builtin": "amago.envs.builtin",
    },
)
