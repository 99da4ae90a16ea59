"""AMAGO's ``amago.envs.amago_env``: ``AMAGOEnv`` and the sequence wrapper (amago-core's rollout contract)."""

from __future__ import annotations

from typing import Any

from amago._compat import shim_exports
from amago_core.rollout import AMAGOEnv as _CoreAMAGOEnv


class AMAGOEnv(_CoreAMAGOEnv):
    """amago-core's ``AMAGOEnv`` as AMAGO scripts use it: unknown attribute reads go on to the wrapped env.

    AMAGO's ``AMAGOEnv`` was a gymnasium 0.29 wrapper, which forwarded them (example 11 reads
    ``make_train_env().suggested_max_seq_len``); gymnasium 1.x wrappers and amago-core's ``AMAGOEnv`` do not.
    Private names are never forwarded.
    """

    def __getattr__(self, name: str) -> Any:
        env = self.__dict__.get("env")  # read directly: during unpickling `env` is not set yet
        if name.startswith("_") or env is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(env, name)


__getattr__, _dir_of_exports, _exports = shim_exports(
    __name__,
    {
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
__all__ = ["AMAGOEnv", *_exports]


def __dir__() -> list[str]:
    return sorted({*__all__, *_dir_of_exports()})
