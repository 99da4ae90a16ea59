"""amago-envs: env suites (one extra each) and exploration wrappers, as plugins.

The rollout contract these build on (``AMAGOEnv``, ``SequenceEnv``, ``EnvCreator``, the vector pools) lives in
``amago_core.rollout``; its names are re-exported here, and the old module paths (``amago_envs.env``,
``amago_envs.pools``...) still import, so code written against them keeps working. Public names load lazily
(PEP 562): spec modules under this package are imported by ``amago list``, which must not pay for gymnasium.
"""

from __future__ import annotations

from amago_core.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "AMAGOEnv": "amago_core.rollout",
        "AMAGO_ENV_LOG_PREFIX": "amago_core.rollout",
        "EnvContractError": "amago_core.rollout",
        "SequenceEnv": "amago_core.rollout",
        "StepResult": "amago_core.rollout",
        "EnvCreator": "amago_core.rollout",
        "make_pool": "amago_core.rollout",
        "EpsilonGreedy": "amago_envs.exploration.wrappers",
        "BilevelEpsilonGreedy": "amago_envs.exploration.wrappers",
    },
)
