"""``TwoAttemptProcgen``: one random game and level per episode, played twice, as a gymnasium env.

procgen is driven through its gym3 interface (``ProcgenGym3Env``: ``observe() -> (reward, obs, first)`` and
``act(actions)``), the one procgen itself implements; the old-``gym`` wrapper on top of it is not needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np

from amago_envs.suites.procgen.specs import MEMORY_GAMES

NUM_ACTIONS = 15
"""procgen's full action set (every game uses the same 15 buttons)."""

FRAME_SHAPE = (64, 64, 3)
BOX_SIZE = 4
"""Side of the black square painted in the top-left corner during the second attempt (the "retry" flag)."""


def procgen_mode(distribution: str, game: str) -> str:
    """procgen's ``distribution_mode`` for ``game``: memory-hard uses "memory" where the game has it, else "hard"."""
    if distribution == "memory-hard":
        return "memory" if game in MEMORY_GAMES else "hard"
    return distribution


def make_procgen_game(game: str, level: int, distribution_mode: str) -> Any:
    """One procgen gym3 env locked to a single level (the real procgen; imported here)."""
    from procgen import ProcgenGym3Env

    return ProcgenGym3Env(
        num=1, env_name=game, start_level=level, num_levels=1, distribution_mode=distribution_mode
    )


class TwoAttemptProcgen(gymnasium.Env[np.ndarray, np.int64]):
    """Two attempts at the same procgen level; what was learned in the first should help in the second.

    Each reset draws a game from ``games`` and a level from ``level_range``. When the first attempt ends,
    procgen restarts the same level and this env keeps going, marking every frame of the second attempt with
    a black ``4x4`` square in the top-left corner. The episode terminates when the second attempt ends, and
    is truncated after ``horizon`` steps. Rewards are multiplied by the game's entry in ``reward_scales``.

    Observations: ``(64, 64, 3)`` uint8 frames. Actions: ``Discrete(15)``. ``env_name`` is the current game,
    so metrics are logged per game.

    Args:
        games: games to draw from.
        level_range: inclusive ``(low, high)`` range of level seeds.
        distribution: ``easy``, ``hard`` or ``memory-hard``.
        horizon: step limit of the whole episode.
        reward_scales: per-game reward multipliers (missing games: 1).
        make_game: builds a gym3 procgen env from ``(game, level, distribution_mode)``.
    """

    def __init__(
        self,
        games: Sequence[str],
        level_range: tuple[int, int],
        distribution: str = "easy",
        horizon: int = 2000,
        reward_scales: Mapping[str, float] | None = None,
        make_game: Callable[[str, int, str], Any] = make_procgen_game,
    ):
        if not games:
            msg = "TwoAttemptProcgen needs at least one game."
            raise ValueError(msg)
        if level_range[0] > level_range[1]:
            msg = f"level_range {level_range} is empty; give (low, high) with low <= high."
            raise ValueError(msg)
        self.games = tuple(games)
        self.level_range = level_range
        self.distribution = distribution
        self.horizon = horizon
        self.reward_scales = dict(reward_scales or {})
        self._make_game = make_game
        self.observation_space = gymnasium.spaces.Box(0, 255, FRAME_SHAPE, np.uint8)
        self.action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self.env_name = self.games[0]
        self._game_env: Any = None
        self.level: int | None = None

    def _frame(self, obs: Any) -> np.ndarray:
        frame = np.array(obs["rgb"][0], dtype=np.uint8)  # a copy: procgen reuses its buffer
        if self.attempt == 2:
            frame[:BOX_SIZE, :BOX_SIZE] = 0
        return frame

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        """A new random game and level; the first attempt starts."""
        super().reset(seed=seed)
        if self._game_env is not None:
            self._game_env.close()
        self.env_name = self.games[int(self.np_random.integers(len(self.games)))]
        self.level = int(self.np_random.integers(self.level_range[0], self.level_range[1] + 1))
        self._game_env = self._make_game(
            self.env_name, self.level, procgen_mode(self.distribution, self.env_name)
        )
        self.attempt = 1
        self._steps = 0
        _, obs, _ = self._game_env.observe()
        return self._frame(obs), {}

    def step(self, action: int | np.integer) -> tuple[np.ndarray, float, bool, bool, dict]:
        """One procgen step; the end of the first attempt restarts the level for the second."""
        if self._game_env is None:
            msg = "TwoAttemptProcgen.step() before reset(); call reset() first."
            raise RuntimeError(msg)
        self._game_env.act(np.array([int(action)], dtype=np.int32))
        reward, obs, first = self._game_env.observe()
        self._steps += 1
        attempt_over = bool(first[0])  # gym3 restarts the (single) level itself and flags its first frame
        terminated = attempt_over and self.attempt == 2
        if attempt_over and self.attempt == 1:
            self.attempt = 2
        truncated = not terminated and self._steps >= self.horizon
        scaled = float(reward[0]) * self.reward_scales.get(self.env_name, 1.0)
        return self._frame(obs), scaled, terminated, truncated, {}

    def close(self) -> None:
        """Closes the current procgen env."""
        if self._game_env is not None:
            self._game_env.close()
            self._game_env = None
