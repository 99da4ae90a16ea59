"""``ALESuite``: the ``ale`` env suite (``ale-<Game>`` and ``ale-multigame``)."""

from __future__ import annotations

from typing import Any

import gymnasium

from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.ale.env import MultiGameAtari, make_atari_game
from amago_envs.suites.ale.specs import MULTIGAME, ALEConfig
from amago_envs.suites.suite import SPLITS, BuiltinSuite


class ALESuite(BuiltinSuite):
    """Atari games; train, val and test play the same games (the emulator's randomness differs per run)."""

    config_type = ALEConfig
    config: ALEConfig

    @property
    def default_task(self) -> str:
        """``multigame``: AMAGO's multi-game Atari setup."""
        return MULTIGAME

    @property
    def env_name(self) -> str:
        """The game (``Pong``); for ``ale-multigame`` the env names itself after the game it is playing."""
        return "ALE-multigame" if self.task == MULTIGAME else self.required_task

    def _game_options(self) -> dict[str, Any]:
        options = self.config.model_dump(exclude={"kind", "task", "games"})
        options["resolution"] = tuple(options["resolution"])
        return options

    def make_gym_env(self) -> gymnasium.Env[Any, Any]:
        """One game, or the random-game mix over ``games``."""
        if self.task == MULTIGAME:
            return MultiGameAtari(tuple(self.config.games), **self._game_options())
        return make_atari_game(self.required_task, **self._game_options())

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """The env for ``split``; multi-game envs are named per game by the env itself (``env_name=None``)."""
        if self.task != MULTIGAME or split not in SPLITS:
            return super().make_env(split)  # the base class also rejects unknown splits
        return AMAGOEnv(self.make_gym_env(), env_name=None)
