"""AMAGO's ``amago.envs.amago_env``: ``AMAGOEnv`` and the sequence wrapper (amago-core's rollout contract)."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "AMAGOEnv": "amago_core.rollout:AMAGOEnv",
        "AMAGO_ENV_LOG_PREFIX": "amago_core.rollout:AMAGO_ENV_LOG_PREFIX",
        "EnvCreator": "amago_core.rollout:EnvCreator",
        # Same role as AMAGO's SequenceWrapper (same-step resets, trajectory files, episode statistics); the
        # experiment builds it around each env, so scripts rarely touch it.
        "SequenceWrapper": "amago_core.rollout:SequenceEnv",
    },
    no_counterpart={
        "ReturnHistory": "each SequenceEnv keeps its episode returns in return_history "
        "({env_name: [returns]}); evaluate_test() and the val/ metrics summarise them",
        "SpecialMetricHistory": "each SequenceEnv keeps the info metrics in metric_history "
        "({env_name: {key: [values]}}); the val/ and test/ metrics summarise them",
    },
)
