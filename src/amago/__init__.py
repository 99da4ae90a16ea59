"""amago: the meta-package. Re-exports the public API lazily so that `import amago` stays cheap."""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> module that defines it; resolved on first attribute access (PEP 562).
_LAZY_EXPORTS = {
    "ComponentSpec": "amago_core.plugins",
    "ComponentConfig": "amago_core.config",
    "Registry": "amago_core.plugins",
    "registries": "amago_core.plugins",
    "ExperimentConfig": "amago_core.config.experiment",
    "load_config": "amago_core.config.sources",
    "Experiment": "amago_core.experiment",
    "build_experiment": "amago_core.experiment.builder",
    "AMAGOEnv": "amago_envs.env",
    "AMAGO_ENV_LOG_PREFIX": "amago_envs.env",
    "TstepEncoder": "amago_nets.base",
    "TrajEncoder": "amago_nets.base",
    "check_component": "amago_core.testing",
}

# AMAGO's submodule spellings: `amago.envs.AMAGOEnv`, `amago.nets.TrajEncoder`, `amago.agents`.
_SUBPACKAGES = {"envs": "amago_envs", "nets": "amago_nets", "agents": "amago_agents", "core": "amago_core"}

__all__ = sorted(_LAZY_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(_SUBPACKAGES[name])
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        msg = f"module 'amago' has no attribute {name!r}; public names: {', '.join(__all__)}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module_name), name)
