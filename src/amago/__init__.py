"""amago: the meta-package. Re-exports the public API lazily so that `import amago` stays cheap (no torch).

AMAGO's import paths work too (``from amago.envs import AMAGOEnv``, ``import amago.nets``,
``from amago.nets.traj_encoders import TformerTrajEncoder``, ``from amago.agent import MultiTaskAgent``): the
modules of this package re-export amago's counterparts under AMAGO's names, and an AMAGO name that amago
replaced raises a one-line ImportError saying what to use (see docs/migration-from-amago.md).
"""

from __future__ import annotations

from amago._compat import shim_exports
from amago._registries import (
    AGENT_REGISTRY,
    EXPLORATION_CLASSES,
    EXPLORATION_REGISTRY,
    TRAJ_ENCODER_REGISTRY,
    TSTEP_ENCODER_REGISTRY,
)

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "ComponentSpec": "amago_core.plugins:ComponentSpec",
        "ComponentConfig": "amago_core.config:ComponentConfig",
        "Registry": "amago_core.plugins:Registry",
        "registries": "amago_core.plugins:registries",
        "ExperimentConfig": "amago_core.config.experiment:ExperimentConfig",
        "load_config": "amago_core.config.sources:load_config",
        "Experiment": "amago.from_amago.experiment:Experiment",
        "plan_run": "amago_core.config.resolve:plan_run",
        "train": "amago_core.experiment.train:train",
        "load_policy": "amago_tools.policy:load_policy",
        "AMAGOEnv": "amago.envs.amago_env:AMAGOEnv",
        "AMAGO_ENV_LOG_PREFIX": "amago_core.rollout:AMAGO_ENV_LOG_PREFIX",
        "TstepEncoder": "amago_nets.base:TstepEncoder",
        "TrajEncoder": "amago_nets.base:TrajEncoder",
        "Agent": "amago_agents.agent:Agent",
        "check_component": "amago_core.testing:check_component",
        **AGENT_REGISTRY,
        **TSTEP_ENCODER_REGISTRY,
        **TRAJ_ENCODER_REGISTRY,
        **EXPLORATION_REGISTRY,
        **EXPLORATION_CLASSES,
    },
    submodules={
        # AMAGO's modules (this package's shims)...
        "agent": "amago.agent",
        "cli_utils": "amago.cli_utils",
        "envs": "amago.envs",
        "experiment": "amago.experiment",
        "hindsight": "amago.hindsight",
        "loading": "amago.loading",
        "nets": "amago.nets",
        # ...and amago's own packages, whole.
        "agents": "amago_agents",
        "core": "amago_core",
    },
)
