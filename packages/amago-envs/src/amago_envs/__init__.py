"""amago-envs: the AMAGOEnv contract, exploration wrappers, vector pools and env suites.

Public names are resolved lazily (PEP 562): spec modules under this package are imported by `amago list`,
which must not pay for gymnasium, so importing the package itself stays free of it.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY_EXPORTS = {
    "AMAGOEnv": "amago_envs.env",
    "AMAGO_ENV_LOG_PREFIX": "amago_envs.env",
    "EnvContractError": "amago_envs.env",
    "SequenceEnv": "amago_envs.sequence",
    "StepResult": "amago_envs.sequence",
    "EnvCreator": "amago_envs.creator",
    "make_pool": "amago_envs.pools",
}

__all__ = sorted(_LAZY_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        msg = f"module 'amago_envs' has no attribute {name!r}; public names: {', '.join(__all__)}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module_name), name)
