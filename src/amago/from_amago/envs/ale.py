"""AMAGO's Atari classes with AMAGO's constructors, on amago-envs' ``ale`` suite (ale-py)."""

from __future__ import annotations

from typing import Any

import gymnasium

from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.ale.env import MultiGameAtari, make_atari_game


class AtariGame(gymnasium.Wrapper):
    """AMAGO's ``AtariGame(game, ...)``: one Atari game (full 18-action set) with AMAGO's preprocessing; the
    game's name is ``rom_name``.

    Args:
        game: the game (``Pong``).
        resolution: frame size (height, width).
        grayscale: grayscale frames instead of colour.
        time_limit: frames before the episode is truncated (108,000: 30 minutes).
        frame_skip: frames per step.
        channels_last: (H, W, C) frames instead of (C, H, W).
        action_space: ``discrete``, ``multibinary`` (up, down, left, right, fire) or ``continuous``.
        sticky_action_prob: probability of repeating the previous action.
        terminal_on_life_loss: end the episode when a life is lost.
        version: the ALE version; ``v5`` (the only one of ``ALE/`` ids).
        continuous_action_threshold: how far a continuous action must go to press its button.
        clip_rewards: clip rewards to [-1, 1].

    Raises:
        ValueError: a ``version`` other than ``v5``, or an unknown ``action_space``.
    """

    def __init__(
        self,
        game: str,
        resolution: tuple[int, int] = (84, 84),
        grayscale: bool = False,
        time_limit: int = 108_000,
        frame_skip: int = 4,
        channels_last: bool = False,
        action_space: str = "discrete",
        sticky_action_prob: float = 0.25,
        terminal_on_life_loss: bool = False,
        version: str = "v5",
        continuous_action_threshold: float = 0.5,
        clip_rewards: bool = False,
    ) -> None:
        if version != "v5":
            msg = f"AtariGame: version {version!r} has no ALE/ id; use version='v5' (AMAGO's default)"
            raise ValueError(msg)
        super().__init__(
            make_atari_game(
                game,
                resolution=tuple(resolution),  # type: ignore[arg-type]
                grayscale=grayscale,
                channels_last=channels_last,
                frame_skip=frame_skip,
                sticky_action_prob=sticky_action_prob,
                time_limit_frames=time_limit,
                terminal_on_life_loss=terminal_on_life_loss,
                action_space=action_space,
                continuous_action_threshold=continuous_action_threshold,
                clip_rewards=clip_rewards,
            )
        )
        self.rom_name = game
        self.time_limit = time_limit
        self.frame_skip = frame_skip
        self.action_space_type = action_space


class ALE(MultiGameAtari):
    """AMAGO's ``ALE(game_names)``: a random game per episode (each with ``AtariGame``'s defaults); the current
    game is ``rom_name``."""

    def __init__(self, game_names: list[str]) -> None:
        super().__init__(tuple(game_names))

    @property
    def rom_name(self) -> str:
        """The current game."""
        return self.current_game


class AtariAMAGOWrapper(AMAGOEnv):
    """AMAGO's ``AtariAMAGOWrapper(env)``: an ``AtariGame`` or ``ALE`` as an ``AMAGOEnv`` named by its game.

    Raises:
        TypeError: ``env`` is neither.
    """

    def __init__(self, env: Any) -> None:
        if not isinstance(env, AtariGame | ALE):
            msg = f"AtariAMAGOWrapper wraps an AtariGame or ALE, got {type(env).__name__}"
            raise TypeError(msg)
        super().__init__(env, env_name="Atari-placeholder")

    @property
    def env_name(self) -> str:
        """The current game's name (``rom_name``)."""
        return str(self.env.rom_name)


__all__ = ["ALE", "AtariAMAGOWrapper", "AtariGame"]
