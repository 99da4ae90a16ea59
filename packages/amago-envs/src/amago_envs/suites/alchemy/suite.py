"""``AlchemySuite``: symbolic DM Alchemy through the dm_env adapter."""

from __future__ import annotations

from amago_envs.suites.alchemy.dm_env_adapter import DmEnvToGymnasium
from amago_envs.suites.alchemy.specs import ALCHEMY_LEVEL, AlchemyConfig
from amago_envs.suites.suite import BuiltinSuite


class AlchemySuite(BuiltinSuite):
    """The ``alchemy`` env suite: one level, a new chemistry (and dm_alchemy seed) per episode."""

    config_type = AlchemyConfig
    config: AlchemyConfig

    @property
    def env_name(self) -> str:
        """``Alchemy-Symbolic``."""
        return "Alchemy-Symbolic"

    def make_level(self, seed: int):
        """The dm_alchemy symbolic level with this suite's options, seeded."""
        from dm_alchemy import symbolic_alchemy

        cfg = self.config
        return symbolic_alchemy.get_symbolic_alchemy_level(
            f"alchemy/{ALCHEMY_LEVEL}",
            observe_used=cfg.observe_used,
            end_trial_action=cfg.end_trial_action,
            num_trials=cfg.num_trials,
            max_steps_per_trial=cfg.max_steps_per_trial,
            seed=seed,
        )

    def make_gym_env(self) -> DmEnvToGymnasium:
        """A gymnasium env that builds a new seeded level at every reset."""
        return DmEnvToGymnasium(self.make_level, env_name=self.env_name)
