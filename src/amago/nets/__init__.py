"""AMAGO's ``amago.nets``: the encoders and network pieces (amago-nets) under AMAGO's module names.

``import amago.nets`` stays cheap; the submodules (``tstep_encoders``, ``traj_encoders``, ``transformer``,
``cnn``, ``ff``, ``utils``, ``actor_critic``, ``policy_dists``, ``goal_embedders``) load on first use.
"""

from __future__ import annotations

from amago._compat import shim_exports
from amago._registries import TRAJ_ENCODER_REGISTRY, TSTEP_ENCODER_REGISTRY

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "TstepEncoder": "amago_nets.base:TstepEncoder",
        "TrajEncoder": "amago_nets.base:TrajEncoder",
        **TSTEP_ENCODER_REGISTRY,
        **TRAJ_ENCODER_REGISTRY,
    },
    submodules={
        name: f"{__name__}.{name}"
        for name in (
            "tstep_encoders",
            "traj_encoders",
            "transformer",
            "cnn",
            "ff",
            "utils",
            "actor_critic",
            "policy_dists",
            "goal_embedders",
        )
    },
)
