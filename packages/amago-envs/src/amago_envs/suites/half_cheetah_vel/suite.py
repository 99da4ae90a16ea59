"""``HalfCheetahVelSuite``: the ``half_cheetah_vel`` env suite."""

from __future__ import annotations

from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.half_cheetah_vel.env import HalfCheetahVel
from amago_envs.suites.half_cheetah_vel.specs import HalfCheetahVelConfig
from amago_envs.suites.suite import BuiltinSuite, check_split


class HalfCheetahVelSuite(BuiltinSuite):
    """The ``half_cheetah_vel`` env suite (env id ``half-cheetah-vel``); every split draws from one range.

    Train envs play ``k_train`` attempts per target and val/test envs ``k_eval`` (both 1 by default).
    """

    config_type = HalfCheetahVelConfig
    config: HalfCheetahVelConfig

    @property
    def env_name(self) -> str:
        """``HalfCheetahVel-{lo}-{hi}``: the target range, like example 12's velocity-bucket name."""
        cfg = self.config
        return f"HalfCheetahVel-{cfg.task_min_velocity:g}-{cfg.task_max_velocity:g}"

    def make_gym_env(self, split: str = "train") -> HalfCheetahVel:
        """A fresh HalfCheetahVel of ``split`` (``k_train`` attempts per trial for train, ``k_eval`` otherwise).

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        cfg = self.config
        return HalfCheetahVel(
            task_min_velocity=cfg.task_min_velocity,
            task_max_velocity=cfg.task_max_velocity,
            ctrl_cost_weight=cfg.ctrl_cost_weight,
            max_episode_steps=cfg.max_episode_steps,
            k_episodes=cfg.attempts(split),
            # Decided by both splits: train and eval envs must share one observation space.
            soft_reset_flag=max(cfg.k_train, cfg.k_eval) > 1,
        )

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """One HalfCheetahVel of ``split`` in ``AMAGOEnv``.

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        check_split(split)
        return AMAGOEnv(self.make_gym_env(split), env_name=self.env_name)
