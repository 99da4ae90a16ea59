"""amago: the meta-package. Re-exports the public API lazily so that `import amago` stays cheap.

AMAGO's submodule spellings work as attributes: ``amago.envs.AMAGOEnv``, ``amago.nets.TrajEncoder``,
``amago.agents``.
"""

from __future__ import annotations

from amago_core.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "ComponentSpec": "amago_core.plugins",
        "ComponentConfig": "amago_core.config",
        "Registry": "amago_core.plugins",
        "registries": "amago_core.plugins",
        "ExperimentConfig": "amago_core.config.experiment",
        "load_config": "amago_core.config.sources",
        "Experiment": "amago_core.experiment",
        "build_experiment": "amago_core.experiment",
        "AMAGOEnv": "amago_core.rollout",
        "AMAGO_ENV_LOG_PREFIX": "amago_core.rollout",
        "TstepEncoder": "amago_nets.base",
        "TrajEncoder": "amago_nets.base",
        "check_component": "amago_core.testing",
    },
    submodules={"envs": "amago_envs", "nets": "amago_nets", "agents": "amago_agents", "core": "amago_core"},
)
