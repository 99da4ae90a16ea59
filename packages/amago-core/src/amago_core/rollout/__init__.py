"""The rollout contract: how any gymnasium env becomes batched ``Timestep``s that the experiment loop steps.

``AMAGOEnv`` (the env wrapper), ``SequenceEnv`` (same-step resets, trajectory recording, episode statistics),
``EnvCreator`` (a picklable recipe for one actor's env stack), the vector pools (``sync``, ``async``,
``already_vectorized``) and the ``EnvSuite`` protocol that env-suite plugins implement. It depends on
gymnasium and numpy, never on torch, and names no concrete environment: suites live in plugins (amago-envs).
"""

from __future__ import annotations

from amago_core.rollout.creator import EnvCreator
from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX, AMAGOEnv, EnvContractError, NonFiniteEnvDataError
from amago_core.rollout.pools import ENV_MODES, EnvMode, VectorPool, make_pool
from amago_core.rollout.sequence import SequenceEnv, StepResult
from amago_core.rollout.suite import EnvSuite

__all__ = [
    "AMAGO_ENV_LOG_PREFIX",
    "ENV_MODES",
    "AMAGOEnv",
    "EnvContractError",
    "EnvCreator",
    "EnvMode",
    "EnvSuite",
    "NonFiniteEnvDataError",
    "SequenceEnv",
    "StepResult",
    "VectorPool",
    "make_pool",
]
