"""``HalfCheetahVelSuite``: the ``half_cheetah_vel`` env suite."""

from __future__ import annotations

from amago_envs.suites.half_cheetah_vel.env import HalfCheetahVel
from amago_envs.suites.half_cheetah_vel.specs import HalfCheetahVelConfig
from amago_envs.suites.suite import BuiltinSuite


class HalfCheetahVelSuite(BuiltinSuite):
    """The ``half_cheetah_vel`` env suite (env id ``half-cheetah-vel``); every split draws from one range."""

    config_type = HalfCheetahVelConfig
    config: HalfCheetahVelConfig

    @property
    def env_name(self) -> str:
        """``HalfCheetahVel-{lo}-{hi}``: the target range, like example 12's velocity-bucket name."""
        cfg = self.config
        return f"HalfCheetahVel-{cfg.task_min_velocity:g}-{cfg.task_max_velocity:g}"

    def make_gym_env(self) -> HalfCheetahVel:
        """A fresh HalfCheetahVel."""
        cfg = self.config
        return HalfCheetahVel(
            task_min_velocity=cfg.task_min_velocity,
            task_max_velocity=cfg.task_max_velocity,
            ctrl_cost_weight=cfg.ctrl_cost_weight,
            max_episode_steps=cfg.max_episode_steps,
        )
