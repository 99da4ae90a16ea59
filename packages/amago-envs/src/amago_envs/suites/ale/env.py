"""Atari through ale-py: one game with AMAGO's preprocessing, and a random game per episode.

``make_atari_game`` builds ``ALE/<Game>-v5`` with the emulator's frame skip turned off and gymnasium's
``AtariPreprocessing`` doing it instead (max of the last two frames, resize, optional grayscale), so colour
and grayscale get the same flicker handling. Sticky actions stay in the emulator, where they act per frame.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import ale_py
import gymnasium
import numpy as np
from gymnasium.wrappers import AtariPreprocessing

gymnasium.register_envs(ale_py)

BUTTONS: tuple[str, ...] = ("up", "down", "left", "right", "fire")
"""Order of the MultiBinary buttons."""


def _button_table() -> np.ndarray:
    """(2,)*5 table: pressed buttons -> the ALE action (opposite directions cancel, as on a joystick)."""
    table = np.zeros((2,) * len(BUTTONS), dtype=np.int64)
    for index in np.ndindex(table.shape):
        up, down, left, right, fire = index
        vertical = "UP" if up > down else "DOWN" if down > up else ""
        horizontal = "RIGHT" if right > left else "LEFT" if left > right else ""
        name = vertical + horizontal + ("FIRE" if fire else "")
        # Lookup through __members__: ale_py's stubs declare Action as a plain class, not the Enum it is.
        table[index] = ale_py.Action.__members__[name or "NOOP"].value
    return table


class _ButtonActions(gymnasium.ActionWrapper):
    """``MultiBinary(5)`` buttons (up, down, left, right, fire) -> one of the 18 full-action indices."""

    def __init__(self, env: gymnasium.Env[Any, Any]):
        super().__init__(env)
        if not (isinstance(env.action_space, gymnasium.spaces.Discrete) and env.action_space.n == 18):
            msg = f"button actions need the full 18-action set; this env has {env.action_space}."
            raise ValueError(msg)
        self._table = _button_table()
        self.action_space = gymnasium.spaces.MultiBinary(len(BUTTONS))

    def action(self, action: Any) -> int:
        pressed = tuple(int(b) for b in np.asarray(action).reshape(-1))
        return int(self._table[pressed])


class _Frames(gymnasium.ObservationWrapper):
    """Gives frames a channel axis in the chosen place: (C, H, W) or (H, W, C)."""

    def __init__(self, env: gymnasium.Env[Any, Any], channels_last: bool):
        super().__init__(env)
        self.channels_last = channels_last
        shape = env.observation_space.shape
        if shape is None:
            msg = f"frame observations need a shaped (Box) space; this env has {env.observation_space}."
            raise ValueError(msg)
        hwc = (*shape, 1) if len(shape) == 2 else shape
        out = hwc if channels_last else (hwc[2], hwc[0], hwc[1])
        self.observation_space = gymnasium.spaces.Box(0, 255, shape=out, dtype=np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        frame = observation[..., None] if observation.ndim == 2 else observation
        return frame if self.channels_last else np.ascontiguousarray(frame.transpose(2, 0, 1))


class _SignRewards(gymnasium.RewardWrapper):
    """Clips rewards to their sign (-1, 0, 1)."""

    def reward(self, reward: SupportsFloat) -> float:
        return float(np.sign(float(reward)))


def make_atari_game(
    game: str,
    resolution: tuple[int, int] = (84, 84),
    grayscale: bool = False,
    channels_last: bool = False,
    frame_skip: int = 4,
    sticky_action_prob: float = 0.25,
    time_limit_frames: int = 108_000,
    terminal_on_life_loss: bool = False,
    action_space: str = "discrete",
    continuous_action_threshold: float = 0.5,
    clip_rewards: bool = False,
) -> gymnasium.Env[np.ndarray, Any]:
    """One Atari game with AMAGO's preprocessing; arguments as in ``ALEConfig``.

    Raises:
        ValueError: unknown ``action_space``.
    """
    if action_space not in ("discrete", "multibinary", "continuous"):
        msg = f"action_space must be discrete, multibinary or continuous; got {action_space!r}."
        raise ValueError(msg)
    env = gymnasium.make(
        f"ALE/{game}-v5",
        frameskip=1,
        repeat_action_probability=sticky_action_prob,
        full_action_space=True,
        max_num_frames_per_episode=time_limit_frames,
        continuous=action_space == "continuous",
        continuous_action_threshold=continuous_action_threshold,
    )
    height, width = resolution
    env = AtariPreprocessing(
        env,
        noop_max=0,  # sticky actions already make starts stochastic
        frame_skip=frame_skip,
        screen_size=(width, height),
        terminal_on_life_loss=terminal_on_life_loss,
        grayscale_obs=grayscale,
    )
    env = _Frames(env, channels_last)
    if action_space == "multibinary":
        env = _ButtonActions(env)
    if clip_rewards:
        env = _SignRewards(env)
    return env


class MultiGameAtari(gymnasium.Env[np.ndarray, Any]):
    """A random game per episode; all games share the observation and the (full) action space.

    Args:
        games: game names (``Pong``), one drawn uniformly at each reset.
        **game_options: ``make_atari_game`` keyword arguments applied to every game.
    """

    def __init__(self, games: tuple[str, ...], **game_options: Any):
        if not games:
            msg = "MultiGameAtari needs at least one game."
            raise ValueError(msg)
        self.games = tuple(games)
        self._options = game_options
        self._envs: dict[str, gymnasium.Env[np.ndarray, Any]] = {}
        first = self._game_env(self.games[0])
        self.observation_space = first.observation_space
        self.action_space = first.action_space
        self.current_game = self.games[0]

    @property
    def env_name(self) -> str:
        """The current game (``Pong``): returns and frame counts are logged per game."""
        return self.current_game

    def _game_env(self, game: str) -> gymnasium.Env[np.ndarray, Any]:
        # Emulators are built on first use and kept: loading a ROM costs far more than a reset.
        if game not in self._envs:
            self._envs[game] = make_atari_game(game, **self._options)
        return self._envs[game]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        """Draws a game and starts it."""
        super().reset(seed=seed)
        self.current_game = self.games[int(self.np_random.integers(len(self.games)))]
        return self._game_env(self.current_game).reset(seed=int(self.np_random.integers(2**31)))

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        """A step of the current game."""
        return self._envs[self.current_game].step(action)

    def close(self) -> None:
        """Closes every emulator built so far."""
        for env in self._envs.values():
            env.close()
