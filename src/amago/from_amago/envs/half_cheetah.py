"""AMAGO's ``HalfCheetahV4_MetaVelocity``: amago-envs' ``HalfCheetahVel`` with AMAGO's constructor."""

from __future__ import annotations

from typing import Any

from amago_envs.suites.half_cheetah_vel.env import HalfCheetahVel


class HalfCheetahV4_MetaVelocity(HalfCheetahVel):
    """HalfCheetah rewarded for matching a target velocity drawn per episode (``sample_target_velocity``, which a
    subclass may override; the current one is ``target_velocity``).

    Args:
        ctrl_cost_weight: weight of the control cost (AMAGO's default: half of HalfCheetah's).
        velocity_reward_weight: weight of ``-|v - target|``.
        task_min_velocity: lowest target velocity.
        task_max_velocity: highest target velocity.
        **kwargs: more arguments of gymnasium's ``HalfCheetahEnv``; amago's env has none of them.

    Raises:
        TypeError: ``kwargs`` were given (amago's env builds the MuJoCo cheetah with its defaults).
    """

    def __init__(
        self,
        ctrl_cost_weight: float = 0.5 * 0.1,
        velocity_reward_weight: float = 1.0,
        task_min_velocity: float = 0.0,
        task_max_velocity: float = 3.0,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            msg = (
                f"HalfCheetahV4_MetaVelocity: {', '.join(sorted(kwargs))} (arguments of gymnasium's HalfCheetahEnv) "
                "have no counterpart; amago's HalfCheetahVel builds the cheetah with gymnasium's defaults"
            )
            raise TypeError(msg)
        super().__init__(
            task_min_velocity=task_min_velocity,
            task_max_velocity=task_max_velocity,
            ctrl_cost_weight=ctrl_cost_weight,
            velocity_reward_weight=velocity_reward_weight,
        )


__all__ = ["HalfCheetahV4_MetaVelocity"]
