"""AMAGO's ``amago.envs.builtin.half_cheetah_v4_vel``: HalfCheetahVel is amago-envs' ``half_cheetah_vel``
suite."""

from __future__ import annotations

from amago._compat import shim_exports

_CHEETAH = (
    "use the env id half-cheetah-vel, or amago_envs.suites.half_cheetah_vel.env.HalfCheetahVel("
    "task_min_velocity, task_max_velocity)"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={"HalfCheetahV4_MetaVelocity": _CHEETAH, "HalfCheetahV4LogVelocity": _CHEETAH},
)
