"""Dark Key-To-Door: finite-horizon meta-RL in one room (after Algorithm Distillation, Laskin et al., 2022).

Every ``reset`` draws a room: a start cell, a key cell and a door cell. Within the room the agent earns
+1 for picking up the key and +1 for reaching the door while holding it. An attempt ends at the door or
after ``max_episode_steps``; the next step is a zero-reward transition that puts the agent back at the
start of the same room without the key. The env episode ends after ``meta_rollout_horizon`` steps, so the
best policy finds the key and door once and then repeats the shortest route as often as time allows. In
the dark version the key and door are invisible, so only memory of earlier rewards locates them.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX
from amago_envs.suites import grid_frames
from amago_envs.suites.actions import is_discrete_action
from amago_envs.suites.specs import KeyDoorConfig
from amago_envs.suites.suite import BuiltinSuite

# Action index -> (dx, dy); index 4 stands still.
_MOVES: tuple[tuple[int, int], ...] = ((0, -1), (-1, 0), (0, 1), (1, 0), (0, 0))

Location = str | tuple[int, int]


class RoomKeyDoor(gymnasium.Env[np.ndarray, np.int64]):
    """Key then door, as many times as possible within one room's horizon.

    Observation: ``[x / size, y / size, has_key, attempt_time / max_episode_steps]``, plus the door's and
    the key's normalised coordinates when not ``dark``; all in [0, 1]. Actions: 0..3 move (clipped at the
    walls), 4 stays. On the room's last step ``terminated`` and ``truncated`` are both True, and the info
    holds ``Doors Opened`` (attempts solved in this room) as an env metric.

    Args:
        dark: hide the key and door positions.
        size: side of the square room.
        max_episode_steps: steps of one attempt.
        meta_rollout_horizon: steps in one room, across attempts.
        start_location: ``(x, y)`` or ``"random"`` (drawn per room).
        key_location: ``(x, y)`` or ``"random"``.
        goal_location: the door, ``(x, y)`` or ``"random"``.
        randomize_actions: shuffle the action-to-direction mapping per room.
        render_mode: None, ``"ansi"`` (text) or ``"rgb_array"`` (a top-down picture).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        dark: bool = True,
        size: int = 9,
        max_episode_steps: int = 50,
        meta_rollout_horizon: int = 500,
        start_location: Location = "random",
        key_location: Location = "random",
        goal_location: Location = "random",
        randomize_actions: bool = False,
        render_mode: str | None = None,
    ):
        if size < 2 or max_episode_steps < 1 or meta_rollout_horizon < 1:
            msg = (
                "need size >= 2, max_episode_steps >= 1 and meta_rollout_horizon >= 1; got "
                f"size={size}, max_episode_steps={max_episode_steps}, "
                f"meta_rollout_horizon={meta_rollout_horizon}."
            )
            raise ValueError(msg)
        for name, location in (("start", start_location), ("key", key_location), ("goal", goal_location)):
            self._check_location(f"{name}_location", location, size)
        if render_mode not in (None, *self.metadata["render_modes"]):
            msg = f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}."
            raise ValueError(msg)
        self.dark = dark
        self.size = size
        self.max_episode_steps = max_episode_steps
        self.meta_rollout_horizon = meta_rollout_horizon
        self.start_location = start_location
        self.key_location = key_location
        self.goal_location = goal_location
        self.randomize_actions = randomize_actions
        self.render_mode = render_mode
        self.action_space = gymnasium.spaces.Discrete(len(_MOVES))
        obs_dim = 4 if dark else 8
        self.observation_space = gymnasium.spaces.Box(low=0.0, high=1.0, shape=(obs_dim,), dtype=np.float32)
        self.global_time: int | None = None  # None until the first reset

    @staticmethod
    def _check_location(name: str, location: Location, size: int) -> None:
        if location == "random":
            return
        if (
            isinstance(location, str)
            or len(location) != 2
            or not all(isinstance(c, int | np.integer) and 0 <= c < size for c in location)
        ):
            msg = f'{name} must be "random" or (x, y) with integers in 0..{size - 1}; got {location!r}.'
            raise ValueError(msg)

    def _draw(self, location: Location) -> np.ndarray:
        if location == "random":
            return self.np_random.integers(0, self.size, size=2)
        return np.array(location, dtype=np.int64)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draws a new room (start, key, door, action mapping) and starts its first attempt."""
        super().reset(seed=seed)
        self.start = self._draw(self.start_location)
        self.key = self._draw(self.key_location)
        self.goal = self._draw(self.goal_location)
        self.moves = list(_MOVES)
        if self.randomize_actions:
            self.moves = [self.moves[i] for i in self.np_random.permutation(len(self.moves))]
        self.global_time = 0
        self.doors_opened = 0
        self.restart_next_step = False
        self._start_attempt()
        return self._observe(), {}

    def _start_attempt(self) -> None:
        self.pos = self.start.copy()
        self.attempt_time = 0
        self.has_key = False

    def step(self, action: int | np.integer) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Moves and pays for key and door, or spends the step returning to the start after an attempt."""
        if self.global_time is None or self.global_time >= self.meta_rollout_horizon:
            msg = "Key-To-Door room is over (or never started); call reset() before step()."
            raise RuntimeError(msg)
        if not is_discrete_action(action, len(_MOVES)):
            msg = f"Key-To-Door actions are 0..{len(_MOVES) - 1}; got {action!r}."
            raise ValueError(msg)
        self.global_time += 1
        reward = 0.0
        if self.restart_next_step:
            # The transition step: the policy sees the attempt's final state before being sent back.
            self._start_attempt()
            self.restart_next_step = False
        else:
            self.attempt_time += 1
            self.pos = np.clip(self.pos + np.array(self.moves[int(action)]), 0, self.size - 1)
            if self.has_key and np.array_equal(self.pos, self.goal):
                reward = 1.0
                self.doors_opened += 1
                self.restart_next_step = True
            elif not self.has_key and np.array_equal(self.pos, self.key):
                reward = 1.0
                self.has_key = True
            if self.attempt_time >= self.max_episode_steps:
                self.restart_next_step = True
        room_over = self.global_time >= self.meta_rollout_horizon
        info: dict[str, Any] = {}
        if room_over:
            info[f"{AMAGO_ENV_LOG_PREFIX} Doors Opened"] = float(self.doors_opened)
        return self._observe(), reward, room_over, room_over, info

    def _observe(self) -> np.ndarray:
        features = [
            self.pos[0] / self.size,
            self.pos[1] / self.size,
            float(self.has_key),
            self.attempt_time / self.max_episode_steps,
        ]
        if not self.dark:
            features += [
                self.goal[0] / self.size,
                self.goal[1] / self.size,
                self.key[0] / self.size,
                self.key[1] / self.size,
            ]
        return np.array(features, dtype=np.float32)

    def render(self) -> str | np.ndarray | None:
        """The room as text (``"ansi"``: ``P`` player, ``K`` key until picked up, ``D`` door) or RGB pixels.

        The ``"rgb_array"`` picture shows the room from above, key and door drawn even in the dark version
        (they are hidden from the agent, not from the viewer): the key as a gold disc until it is picked up,
        then as a gold dot on the agent (a blue disc); the door as a brown cell, the start as a pale one. The
        band above the room fills up with the room's time.
        """
        if self.global_time is None:
            return None
        if self.render_mode == "rgb_array":
            return self._picture(self.global_time)
        if self.render_mode != "ansi":
            return None
        grid = [["." for _ in range(self.size)] for _ in range(self.size)]
        grid[self.goal[0]][self.goal[1]] = "D"
        if not self.has_key:
            grid[self.key[0]][self.key[1]] = "K"
        grid[self.pos[0]][self.pos[1]] = "P"
        header = f"{'dark' if self.dark else 'light'} room, t={self.global_time}/{self.meta_rollout_horizon}"
        return header + "\n" + "\n".join(" ".join(r) for r in grid) + "\n"

    def _picture(self, global_time: int) -> np.ndarray:
        picture = grid_frames.GridPicture(self.size, self.size, band=True)
        for row in range(self.size):
            for col in range(self.size):
                picture.tile(row, col, grid_frames.FLOOR)
        # Rows are the first coordinate, as in the text picture.
        picture.tile(int(self.start[0]), int(self.start[1]), grid_frames.ICE)
        picture.tile(int(self.goal[0]), int(self.goal[1]), grid_frames.DOOR)
        if not self.has_key:
            picture.disc(int(self.key[0]), int(self.key[1]), grid_frames.KEY, radius=0.25)
        row, col = int(self.pos[0]), int(self.pos[1])
        picture.disc(row, col, grid_frames.AGENT)
        if self.has_key:
            picture.disc(row, col, grid_frames.KEY, radius=0.14)
        picture.band_progress(global_time / self.meta_rollout_horizon, grid_frames.AGENT)
        return picture.pixels


class KeyDoorSuite(BuiltinSuite):
    """The ``key_door`` env suite (env id ``key-door``)."""

    config_type = KeyDoorConfig
    config: KeyDoorConfig

    @property
    def env_name(self) -> str:
        """``{Dark|Light}KeyDoor-{n}x{n}-H{meta_rollout_horizon}``."""
        cfg = self.config
        return f"{'Dark' if cfg.dark else 'Light'}KeyDoor-{cfg.size}x{cfg.size}-H{cfg.meta_rollout_horizon}"

    def make_gym_env(self) -> RoomKeyDoor:
        """A fresh Key-To-Door room generator with this suite's options (``rgb_array`` rendering, for videos)."""
        cfg = self.config
        return RoomKeyDoor(
            dark=cfg.dark,
            size=cfg.size,
            max_episode_steps=cfg.max_episode_steps,
            meta_rollout_horizon=cfg.meta_rollout_horizon,
            start_location=cfg.start_location,
            key_location=cfg.key_location,
            goal_location=cfg.goal_location,
            randomize_actions=cfg.randomize_actions,
            render_mode="rgb_array",
        )
