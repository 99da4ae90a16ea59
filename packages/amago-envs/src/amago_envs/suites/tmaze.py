"""T-Maze (Ni et al., 2023, "When Do Transformers Shine in RL?") with AMAGO's "Alt" movement penalty.

The agent starts at one end of a corridor. A single observation at the oracle cell (the far-left cell)
tells whether the goal is up or down at the T-junction at the other end; every corridor cell looks the
same afterwards. The reward arrives only on the last step, and only if the agent stands on the goal side,
so the task measures how far back a policy can recall one bit.

Layout (``x`` grows to the right, ``y`` is -1 / 0 / +1 at the junction)::

    oracle(x=0) ... corridor ... junction(x=L) -> up (L, +1) or down (L, -1)

- passive: the agent starts on the oracle cell and sees the goal side in its first observation;
  episode length ``corridor_length + 1`` (walk right ``corridor_length`` times, then turn).
- active: the agent starts one cell right of the oracle and must step back to read it;
  episode length ``corridor_length + 3``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from amago_envs.suites import grid_frames
from amago_envs.suites.actions import is_discrete_action
from amago_envs.suites.specs import TMAZE_TASKS, TMazeConfig
from amago_envs.suites.suite import BuiltinSuite

# Action index -> (dx, dy). Index 0 ("right") is the only move that escapes the Alt penalty.
RIGHT, UP, LEFT, DOWN = 0, 1, 2, 3
_MOVES: tuple[tuple[int, int], ...] = ((1, 0), (0, 1), (-1, 0), (0, -1))


class TMaze(gymnasium.Env[np.ndarray, np.int64]):
    """One T-Maze episode per reset, with a goal side drawn from the env's seeded generator.

    Observations are 2-d and deliberately ambiguous: ``[0, goal_side]`` on the first visit to the oracle
    cell, ``[0, 0]`` anywhere else in the corridor (the oracle cell included, once read), ``[1, y]`` at
    the junction and the two goal cells. Actions: 0 right, 1 up, 2 left, 3 down; moves into walls do
    nothing. The final step is both terminated and truncated (the horizon is part of the task).

    Args:
        corridor_length: cells between the start of the corridor and the junction.
        active: start one cell right of the oracle (True) or on it (False).
        goal_reward: reward on the final step when standing on the goal side.
        penalty: reward (<= 0) for every non-"right" action after the oracle phase, except on the last step.
        render_mode: None, ``"ansi"`` (a text picture of the maze) or ``"rgb_array"`` (a top-down picture).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        corridor_length: int = 10,
        active: bool = False,
        goal_reward: float = 1.0,
        penalty: float = 0.0,
        render_mode: str | None = None,
    ):
        if corridor_length < 1:
            msg = f"corridor_length must be at least 1, got {corridor_length}."
            raise ValueError(msg)
        if penalty > 0:
            msg = f"penalty must be <= 0 (it punishes leaving the corridor's direction), got {penalty}."
            raise ValueError(msg)
        if render_mode not in (None, *self.metadata["render_modes"]):
            msg = f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}."
            raise ValueError(msg)
        self.corridor_length = corridor_length
        self.active = active
        self.oracle_length = 1 if active else 0
        self.junction_x = self.oracle_length + corridor_length
        self.episode_length = corridor_length + 2 * self.oracle_length + 1
        self.goal_reward = goal_reward
        self.penalty = penalty
        self.render_mode = render_mode
        self.action_space = gymnasium.spaces.Discrete(4)
        self.observation_space = gymnasium.spaces.Box(low=-1.0, high=1.0, shape=(2,), dtype=np.float32)
        self._time: int | None = None  # None until the first reset

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Starts an episode with a new goal side (-1 down, +1 up)."""
        super().reset(seed=seed)
        self.goal_y = int(self.np_random.choice((-1, 1)))
        self.x, self.y = self.oracle_length, 0
        self.oracle_seen = False
        self._time = 0
        return self._observe(), {}

    def step(self, action: int | np.integer) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Moves (walls block), then pays the goal reward on the last step or the Alt penalty before it."""
        if self._time is None or self._time >= self.episode_length:
            msg = "T-Maze episode is over (or never started); call reset() before step()."
            raise RuntimeError(msg)
        if not is_discrete_action(action, 4):
            msg = f"T-Maze actions are 0 (right), 1 (up), 2 (left), 3 (down); got {action!r}."
            raise ValueError(msg)
        action = int(action)
        self._time += 1
        dx, dy = _MOVES[action]
        if self._is_open(self.x + dx, self.y + dy):
            self.x, self.y = self.x + dx, self.y + dy
        done = self._time >= self.episode_length
        if done:
            reward = self.goal_reward if self.y == self.goal_y else 0.0
        elif action != RIGHT and self._time > self.oracle_length:
            reward = self.penalty
        else:
            reward = 0.0
        return self._observe(), float(reward), done, done, {}

    def _is_open(self, x: int, y: int) -> bool:
        on_corridor = y == 0 and 0 <= x <= self.junction_x
        on_goal_cell = x == self.junction_x and y in (-1, 1)
        return on_corridor or on_goal_cell

    def _observe(self) -> np.ndarray:
        if self.x == 0:
            # The goal side is shown only on the first visit; coming back later reads like the corridor.
            shown = 0 if self.oracle_seen else self.goal_y
            self.oracle_seen = True
            return np.array([0.0, shown], dtype=np.float32)
        if self.x < self.junction_x:
            return np.zeros(2, dtype=np.float32)
        return np.array([1.0, self.y], dtype=np.float32)

    def render(self) -> str | np.ndarray | None:
        """The maze as text (``"ansi"``: ``A`` agent, ``G`` goal, ``O`` oracle) or as RGB pixels (``"rgb_array"``).

        The picture shows the corridor (three cells high at the junction), the agent as a blue disc, the oracle
        cell with its goal signal (the half on the goal's side in green) and the two ends: green for the goal
        side, red for the other one.
        """
        if self._time is None:
            return None
        if self.render_mode == "rgb_array":
            return self._picture()
        if self.render_mode != "ansi":
            return None
        width = self.junction_x + 1
        rows = {1: [" "] * width, 0: ["."] * width, -1: [" "] * width}
        rows[1][-1] = rows[-1][-1] = "."
        rows[self.goal_y][-1] = "G"
        rows[0][0] = "O"
        rows[self.y][self.x] = "A"
        return "\n".join("".join(rows[y]) for y in (1, 0, -1)) + "\n"

    def _picture(self) -> np.ndarray:
        picture = grid_frames.GridPicture(3, self.junction_x + 1)
        row_of = {1: 0, 0: 1, -1: 2}  # y = +1 is drawn on top
        for x in range(self.junction_x + 1):
            picture.tile(row_of[0], x, grid_frames.FLOOR)
        for side in (1, -1):
            colour = grid_frames.GOAL if side == self.goal_y else grid_frames.WRONG
            picture.tile(row_of[side], self.junction_x, colour)
        picture.half_tile(row_of[0], 0, grid_frames.GOAL, upper=self.goal_y == 1)
        picture.disc(row_of[self.y], self.x, grid_frames.AGENT)
        return picture.pixels


class TMazeSuite(BuiltinSuite):
    """The ``tmaze`` env suite: ``tmaze-passive`` (default) and ``tmaze-active``."""

    config_type = TMazeConfig
    config: TMazeConfig

    @property
    def default_task(self) -> str:
        """Passive T-Maze: memory alone, without the active variant's credit-assignment detour."""
        return TMAZE_TASKS[0]

    @property
    def penalty(self) -> float:
        """The Alt penalty in use (the config's, or ``-1 / corridor_length`` when it leaves it unset)."""
        if self.config.penalty is not None:
            return self.config.penalty
        return -1.0 / self.config.corridor_length

    @property
    def env_name(self) -> str:
        """``TMaze-{Passive|Active}-H{corridor_length}``."""
        return f"TMaze-{self.required_task.capitalize()}-H{self.config.corridor_length}"

    def make_gym_env(self) -> TMaze:
        """A fresh T-Maze for this suite's task and options (``rgb_array`` rendering, for ``amago eval --video``)."""
        return TMaze(
            corridor_length=self.config.corridor_length,
            active=self.task == "active",
            goal_reward=self.config.goal_reward,
            penalty=self.penalty,
            render_mode="rgb_array",
        )
