"""MazeRunner: reach a sequence of goal cells, in order, in a random maze (AMAGO paper, App. B/C.4).

Every ``reset`` draws a maze (mazelab's random-walk wall algorithm, with an open spawn area at the
bottom), a start cell in that area and a sequence of distinct goal cells reachable from it. Each goal
reached in order pays +1; the episode ends after the last goal or at the time limit. The agent senses its
position, the free distance to the next wall in each direction and the time; the goals are either
appended to that vector or, in the relabel-info variant used for hindsight instruction relabeling,
given in a dict observation next to the cell the agent currently occupies.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium
import numpy as np

from amago_envs.suites import grid_frames
from amago_envs.suites.actions import is_discrete_action
from amago_envs.suites.specs import MazeRunnerConfig
from amago_envs.suites.suite import BuiltinSuite

FREE, WALL = 0, 1
# Action index -> (d_row, d_col): west, north, east, south, stay.
_MOVES = np.array([[0, -1], [-1, 0], [0, 1], [1, 0], [0, 0]], dtype=np.int64)
_DIRECTIONS = _MOVES[:4]  # west, north, east, south: the order of the free-distance features

DONE_GOAL = -1
"""Coordinate value of a goal already reached (and of padding when an episode has fewer goals)."""


def random_maze(
    size: int, rng: np.random.Generator, complexity: float = 0.75, density: float = 0.75
) -> np.ndarray:
    """Draws a ``size`` x ``size`` maze (``size`` odd) of ``FREE`` and ``WALL`` cells with walled borders.

    The algorithm is mazelab's: from ``density``-many random even cells, walls grow in random walks of
    two-cell steps (``complexity`` sets their length), each step joining two wall cells.
    """
    walk_length = int(complexity * (5 * (size + size)))
    n_walls = int(density * ((size // 2) * (size // 2)))
    maze = np.full((size, size), FREE, dtype=np.int64)
    maze[0, :] = maze[-1, :] = WALL
    maze[:, 0] = maze[:, -1] = WALL
    for _ in range(n_walls):
        row = int(rng.integers(0, size // 2 + 1)) * 2
        col = int(rng.integers(0, size // 2 + 1)) * 2
        maze[row, col] = WALL
        for _ in range(walk_length):
            neighbours = []
            if col > 1:
                neighbours.append((row, col - 2))
            if col < size - 2:
                neighbours.append((row, col + 2))
            if row > 1:
                neighbours.append((row - 2, col))
            if row < size - 2:
                neighbours.append((row + 2, col))
            next_row, next_col = neighbours[int(rng.integers(len(neighbours)))]
            if maze[next_row, next_col] == FREE:
                maze[next_row, next_col] = WALL
                maze[next_row + (row - next_row) // 2, next_col + (col - next_col) // 2] = WALL
                row, col = next_row, next_col
    return maze


def carve_spawn_area(maze: np.ndarray) -> tuple[int, int]:
    """Clears the bottom rows into an open spawn area (in place) and returns the start cell in it.

    The start sits in a short dead-end alley in the middle of the bottom row, walled on both sides, so
    the agent always begins facing the same local layout.
    """
    size = maze.shape[0]
    top, bottom = size - 5, size - 1
    maze[top:bottom, 1:-1] = FREE
    maze[top + 1 : bottom, size // 2 - 1] = WALL
    maze[top + 1 : bottom, size // 2 + 1] = WALL
    return size - 2, size // 2


def reachable_cells(maze: np.ndarray, start: tuple[int, int]) -> list[tuple[int, int]]:
    """Free cells reachable from ``start`` by the four moves, in breadth-first order (``start`` first)."""
    seen = {start}
    order = [start]
    frontier = deque([start])
    while frontier:
        row, col = frontier.popleft()
        for d_row, d_col in _DIRECTIONS:
            nxt = (row + int(d_row), col + int(d_col))
            if nxt not in seen and maze[nxt] == FREE:
                seen.add(nxt)
                order.append(nxt)
                frontier.append(nxt)
    return order


class MazeRunner(gymnasium.Env[np.ndarray, np.int64]):
    """Reach the goals in order; +1 each; flat vector observations.

    Observation (float32, in [-1, 1]): ``[row, col, free_west, free_north, free_east, free_south]`` divided
    by the maze size, then ``timer / time_limit``, then (with ``goal_in_obs``) the goal cells divided by the
    maze size, reached goals and padding written as -1. Actions: 0 west, 1 north, 2 east, 3 south, 4 stay
    (moves into walls do nothing), permuted per episode with ``randomized_action_space``. The episode is
    terminated after the last goal; at the time limit it is both terminated and truncated (the timer is in
    the observation, so the horizon is part of the task). ``info["success"]`` says whether a goal was
    reached on that step.

    Args:
        maze_dim: side of the maze; even values are rounded up to odd (at least 7).
        num_goals: goals per episode (the most, with ``min_num_goals``).
        time_limit: steps per episode.
        min_num_goals: fewest goals per episode; None means always ``num_goals``.
        goal_in_obs: append the goal cells to the observation.
        randomized_action_space: permute the action indices per episode ("rewired" actions).
        render_mode: None, ``"ansi"`` (text) or ``"rgb_array"`` (a top-down picture).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        maze_dim: int = 11,
        num_goals: int = 3,
        time_limit: int = 250,
        min_num_goals: int | None = None,
        goal_in_obs: bool = True,
        randomized_action_space: bool = False,
        render_mode: str | None = None,
    ):
        min_num_goals = num_goals if min_num_goals is None else min_num_goals
        if not 1 <= min_num_goals <= num_goals:
            msg = (
                f"need 1 <= min_num_goals <= num_goals, got min_num_goals={min_num_goals}, "
                f"num_goals={num_goals}."
            )
            raise ValueError(msg)
        if maze_dim < 7 or time_limit < 1:
            msg = (
                "need maze_dim >= 7 (room for the spawn area) and time_limit >= 1; "
                f"got maze_dim={maze_dim}, time_limit={time_limit}."
            )
            raise ValueError(msg)
        if render_mode not in (None, *self.metadata["render_modes"]):
            msg = f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}."
            raise ValueError(msg)
        self.maze_dim = (maze_dim // 2) * 2 + 1
        self.num_goals = num_goals
        self.min_num_goals = min_num_goals
        self.time_limit = time_limit
        self.goal_in_obs = goal_in_obs
        self.randomized_action_space = randomized_action_space
        self.render_mode = render_mode
        obs_dim = 7 + (2 * num_goals if goal_in_obs else 0)
        self.observation_space = gymnasium.spaces.Box(low=-1.0, high=1.0, shape=(obs_dim,), dtype=np.float32)
        self.action_space = gymnasium.spaces.Discrete(len(_MOVES))
        self.timer: int | None = None  # None until the first reset
        self._over = True

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draws a maze, a goal sequence and (optionally) an action permutation."""
        super().reset(seed=seed)
        self.maze = random_maze(self.maze_dim, self.np_random)
        self.start = carve_spawn_area(self.maze)
        candidates = reachable_cells(self.maze, self.start)[1:]
        n_goals = int(self.np_random.integers(self.min_num_goals, self.num_goals + 1))
        if len(candidates) < n_goals:
            msg = (
                f"this {self.maze_dim}x{self.maze_dim} maze has {len(candidates)} cells reachable from the "
                "start, "
                f"too few for {n_goals} distinct goals; lower num_goals or raise maze_dim."
            )
            raise ValueError(msg)
        # Only reachable cells: a goal walled off from the start would make the episode unsolvable.
        picks = self.np_random.choice(len(candidates), size=n_goals, replace=False)
        self.goals = [candidates[int(i)] for i in picks]
        self.moves = (
            _MOVES[self.np_random.permutation(len(_MOVES))] if self.randomized_action_space else _MOVES
        )
        self.active_goal = 0
        self.pos = self.start
        self.timer = 0
        self._over = False
        return self._observe(), {}

    def step(self, action: int | np.integer) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Moves (walls block) and pays +1 when the active goal is reached."""
        if self._over or self.timer is None:
            msg = "MazeRunner episode is over (or never started); call reset() before step()."
            raise RuntimeError(msg)
        if not is_discrete_action(action, len(_MOVES)):
            msg = f"MazeRunner actions are 0..{len(_MOVES) - 1}; got {action!r}."
            raise ValueError(msg)
        self.timer += 1
        d_row, d_col = self.moves[int(action)]
        target = (self.pos[0] + int(d_row), self.pos[1] + int(d_col))
        # The border is all wall, so a target inside the array is all the bounds check needed.
        if self.maze[target] == FREE:
            self.pos = target
        success = self.pos == self.goals[self.active_goal]
        terminated = False
        if success:
            self.active_goal += 1
            terminated = self.active_goal == len(self.goals)
        truncated = self.timer >= self.time_limit
        terminated = terminated or truncated
        self._over = terminated
        return self._observe(), float(success), terminated, truncated, {"success": success}

    def goal_sequence(self) -> np.ndarray:
        """The goals as an ``(num_goals, 2)`` int32 array; reached goals and front padding are -1."""
        goals = np.full((self.num_goals, 2), DONE_GOAL, dtype=np.int32)
        offset = self.num_goals - len(self.goals)
        for i, goal in enumerate(self.goals):
            if i >= self.active_goal:
                goals[offset + i] = goal
        return goals

    def free_distances(self) -> np.ndarray:
        """Free cells between the agent and the nearest wall to the west, north, east and south."""
        distances = np.zeros(4, dtype=np.int64)
        for i, (d_row, d_col) in enumerate(_DIRECTIONS):
            row, col = self.pos[0] + d_row, self.pos[1] + d_col
            while self.maze[row, col] == FREE:
                distances[i] += 1
                row, col = row + d_row, col + d_col
        return distances

    def _observe(self) -> np.ndarray:
        if self.timer is None:
            msg = "MazeRunner has no maze before the first reset(); call reset() first."
            raise RuntimeError(msg)
        n = self.maze_dim
        parts = [
            np.array(self.pos) / n,
            self.free_distances() / n,
            np.array([self.timer / self.time_limit]),
        ]
        if self.goal_in_obs:
            parts.append(self.goal_sequence().flatten() / n)
        return np.concatenate(parts).astype(np.float32)

    def render(self) -> str | np.ndarray | None:
        """The maze as text (``"ansi"``: ``#`` wall, ``A`` agent, ``0``-``9`` goals left) or RGB pixels.

        The ``"rgb_array"`` picture shows walls (dark), free cells, the next goal (green), the goals after it
        (pale green), the start (pale blue) and the agent (a blue disc); the band above the maze fills up with
        the episode's time.
        """
        if self.timer is None:
            return None
        if self.render_mode == "rgb_array":
            return self._picture(self.timer)
        if self.render_mode != "ansi":
            return None
        grid = [["#" if cell == WALL else "." for cell in row] for row in self.maze]
        for i, (row, col) in enumerate(self.goals):
            if i >= self.active_goal:
                grid[row][col] = str(i % 10)
        grid[self.pos[0]][self.pos[1]] = "A"
        return f"t={self.timer}/{self.time_limit}\n" + "\n".join("".join(r) for r in grid) + "\n"

    def _picture(self, timer: int) -> np.ndarray:
        picture = grid_frames.GridPicture(self.maze_dim, self.maze_dim, band=True)
        for (row, col), cell in np.ndenumerate(self.maze):
            if cell == FREE:
                picture.tile(row, col, grid_frames.FLOOR)
        picture.tile(*self.start, grid_frames.ICE)
        for i, (row, col) in enumerate(self.goals):
            if i > self.active_goal:
                picture.tile(row, col, grid_frames.GOAL_LATER)
            elif i == self.active_goal:
                picture.tile(row, col, grid_frames.GOAL)
        picture.disc(*self.pos, grid_frames.AGENT)
        picture.band_progress(timer / self.time_limit, grid_frames.AGENT)
        return picture.pixels


class MazeRunnerRelabelInfo(gymnasium.ObservationWrapper[dict[str, np.ndarray], np.int64, np.ndarray]):
    """Dict observations for hindsight instruction relabeling: ``obs``, ``achieved`` and ``goals``.

    ``obs`` is the wrapped env's vector, ``achieved`` the ``(1, 2)`` cell the agent stands on and ``goals``
    the ``(num_goals, 2)`` goal sequence with reached goals at -1. A relabeler replays MazeRunner's reward
    rule on these keys (reward when ``achieved`` equals the first remaining goal).

    Args:
        env: a ``MazeRunner`` (normally with ``goal_in_obs=False``, since ``goals`` carries them).
    """

    def __init__(self, env: MazeRunner):
        if not isinstance(env, MazeRunner):
            msg = f"MazeRunnerRelabelInfo wraps a MazeRunner, got {type(env).__name__}."
            raise TypeError(msg)
        super().__init__(env)
        n = env.maze_dim
        # gymnasium types a Dict space's elements as dict[str, Space] rather than dicts of samples.
        self.observation_space = gymnasium.spaces.Dict(  # type: ignore[assignment]
            {
                "obs": env.observation_space,
                "achieved": gymnasium.spaces.Box(low=0, high=n - 1, shape=(1, 2), dtype=np.int32),
                "goals": gymnasium.spaces.Box(
                    low=DONE_GOAL, high=n - 1, shape=(env.num_goals, 2), dtype=np.int32
                ),
            }
        )

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        """Adds the agent's cell and the remaining goals to the vector observation."""
        maze_runner: MazeRunner = self.env  # type: ignore[assignment]
        return {
            "obs": observation,
            "achieved": np.array([maze_runner.pos], dtype=np.int32),
            "goals": maze_runner.goal_sequence(),
        }


class MazeRunnerSuite(BuiltinSuite):
    """The ``mazerunner`` env suite (env id ``mazerunner``)."""

    config_type = MazeRunnerConfig
    config: MazeRunnerConfig

    @property
    def env_name(self) -> str:
        """``MazeRunner-{n}x{n}-k{num_goals}``, AMAGO's name, with the maze size as actually built (odd)."""
        n = (self.config.maze_dim // 2) * 2 + 1
        return f"MazeRunner-{n}x{n}-k{self.config.num_goals}"

    def make_gym_env(self) -> gymnasium.Env[Any, np.int64]:
        """A fresh MazeRunner (``rgb_array`` rendering, for videos), wrapped for relabeling when ``relabel_info`` is set."""
        cfg = self.config
        goal_in_obs = (not cfg.relabel_info) if cfg.goal_in_obs is None else cfg.goal_in_obs
        env = MazeRunner(
            maze_dim=cfg.maze_dim,
            num_goals=cfg.num_goals,
            time_limit=cfg.time_limit,
            min_num_goals=cfg.min_num_goals,
            goal_in_obs=goal_in_obs,
            randomized_action_space=cfg.randomized_action_space,
            render_mode="rgb_array",
        )
        return MazeRunnerRelabelInfo(env) if cfg.relabel_info else env
