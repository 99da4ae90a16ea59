"""``ALESuite``: the ``ale`` env suite (``ale-<Game>`` and ``ale-multigame``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gymnasium

from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.ale.env import MultiGameAtari, make_atari_game
from amago_envs.suites.ale.specs import MULTIGAME, ALEConfig
from amago_envs.suites.suite import BuiltinSuite, check_split


def actor_counts_near(n_actors: int, n_games: int) -> list[int]:
    """The multiples of ``n_games`` next to ``n_actors`` (below and above it; the first one when below it)."""
    below = n_actors // n_games * n_games
    return [count for count in (below, below + n_games) if count > 0]


class ALESuite(BuiltinSuite):
    """Atari games; train, val and test play the same games (the emulator's randomness differs per run).

    ``ale-multigame`` pins each actor to one game round-robin (``game_assignment``): the experiment loop asks
    :meth:`actor_makers` for its pools' envs.
    """

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
        options = self.config.model_dump(exclude={"kind", "task", "games", "game_assignment"})
        options["resolution"] = tuple(options["resolution"])
        return options

    def make_gym_env(self) -> gymnasium.Env[Any, Any]:
        """One game, or the random-game mix over ``games``."""
        if self.task == MULTIGAME:
            return MultiGameAtari(tuple(self.config.games), **self._game_options())
        return make_atari_game(self.required_task, **self._game_options())

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """The env for ``split``; multi-game envs are named per game by the env itself (``env_name=None``)."""
        if self.task != MULTIGAME:
            return super().make_env(split)
        check_split(split)
        return AMAGOEnv(self.make_gym_env(), env_name=None)

    def make_game_env(self, split: str, game: str) -> AMAGOEnv:
        """An env that plays only ``game`` (an actor pinned to it), named after it like the multi-game env.

        Raises:
            ValueError: ``split`` is not ``train``, ``val`` or ``test``.
        """
        check_split(split)
        return AMAGOEnv(make_atari_game(game, **self._game_options()), env_name=game)

    def actor_makers(self, split: str, n_actors: int) -> list[Callable[[], AMAGOEnv]]:
        """One env maker per actor: with ``round_robin`` multi-game, actor i plays ``games[i % len(games)]``.

        Raises:
            ValueError: ``round_robin`` and ``n_actors`` is not a multiple of the number of games.
        """
        check_split(split)
        games = self.config.games
        if self.task != MULTIGAME or self.config.game_assignment == "random":
            return [functools.partial(self.make_env, split)] * n_actors
        if n_actors % len(games):
            counts = " or ".join(str(count) for count in actor_counts_near(n_actors, len(games)))
            msg = (
                f"ale-multigame pins actors to games round-robin, but {n_actors} actors do not divide among "
                f"{len(games)} games; use {counts} actors (rollout.parallel_actors; with Ray, ray.actors x "
                "ray.envs_per_actor) or set env.game_assignment='random'."
            )
            raise ValueError(msg)
        return [functools.partial(self.make_game_env, split, games[i % len(games)]) for i in range(n_actors)]
