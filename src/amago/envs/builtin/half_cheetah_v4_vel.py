"""AMAGO's ``amago.envs.builtin.half_cheetah_v4_vel``: HalfCheetahVel is amago-envs' ``half_cheetah_vel``
suite;
its ``HalfCheetahV4_MetaVelocity`` takes AMAGO's arguments and its ``sample_target_velocity`` may be overridden."""

from __future__ import annotations

from amago._compat import shim_exports

_CHEETAH = (
    "use the env id half-cheetah-vel, or amago_envs.suites.half_cheetah_vel.env.HalfCheetahVel("
    "task_min_velocity, task_max_velocity)"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {"HalfCheetahV4_MetaVelocity": "amago.from_amago.envs.half_cheetah:HalfCheetahV4_MetaVelocity"},
    no_counterpart={
        "HalfCheetahV4LogVelocity": "AMAGO's HalfCheetah-v4 with velocity logging has no counterpart; use "
        "gymnasium.make('HalfCheetah-v5'), or for the meta-RL task " + _CHEETAH
    },
)
