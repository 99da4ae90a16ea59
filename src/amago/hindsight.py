"""AMAGO's ``amago.hindsight``: timesteps, trajectories and relabeling (amago-core's data path)."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "Timestep": "amago_core.data.timestep:Timestep",
        "Trajectory": "amago_core.data.trajectory:Trajectory",
        "FrozenTraj": "amago_core.data.trajectory:FrozenTraj",
        "Relabeler": "amago_core.data.dataset:Relabeler",
        # amago's base Relabeler returns its input unchanged, which is what AMAGO's NoOpRelabeler did.
        "NoOpRelabeler": "amago_core.data.dataset:Relabeler",
    },
)
