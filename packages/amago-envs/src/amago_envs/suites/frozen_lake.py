"""Meta-Frozen-Lake: k attempts on one unknown random lake (AMAGO's intro to black-box meta-RL).

Every ``reset`` draws a new lake: a fresh random one, or with ``train_tasks`` one of a finite pool of lake
seeds (train and val) or a lake outside that pool (test, ``amago eval --tasks unseen``). The agent then gets
``k_episodes`` attempts to walk from the top-left corner to the goal in the bottom-right corner without
falling through a hole. An attempt ends at the goal, in a hole (unless ``recover_mode``) or at its step limit;
the agent is then put back at the start of the *same* lake (a soft reset, flagged in the observation), so a
memory-based policy can avoid the holes it found before. The whole env episode ends after the k-th attempt.
"""

from __future__ import annotations

import math
from collections import deque
from functools import lru_cache
from typing import Any

import gymnasium
import numpy as np

from amago_core.config.task_split import TaskSet, TaskSplits
from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX, AMAGOEnv
from amago_envs.suites import grid_frames
from amago_envs.suites.actions import is_discrete_action
from amago_envs.suites.specs import FrozenLakeConfig
from amago_envs.suites.suite import BuiltinSuite, check_split

ICE, HOLE, GOAL = 0, 1, 2
_TILE_CHARS = {ICE: ".", HOLE: "H", GOAL: "G"}
_TILE_COLOURS = {ICE: grid_frames.ICE, HOLE: grid_frames.HOLE, GOAL: grid_frames.GOAL}

# Action index -> (d_row, d_col); index 0 stands still.
_MOVES: tuple[tuple[int, int], ...] = ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1))

FROZEN_PROBABILITY = 0.8
"""Chance that a tile of a new lake is ice rather than a hole (gymnasium's FrozenLake uses the same)."""

HARD_MODE_ACTION_SWAP = 0.5
HARD_MODE_NOISY_POSITION = 0.25
HARD_MODE_BREAK_ICE = 0.33
RECOVER_PENALTY = -0.1

LAKE_SEED_LIMIT = 2**31
"""Held-out lakes are drawn from lake seeds ``train_tasks`` up to this (exclusive)."""

HELD_OUT_TRIES = 1000
"""Held-out draws that land on a pool lake are redrawn at most this many times in a row before giving up."""


def random_lake(size: int, rng: np.random.Generator) -> np.ndarray:
    """Draws a ``size`` x ``size`` lake with an ice path from ``(0, 0)`` to the goal at ``(size-1, size-1)``.

    Tiles are ice with probability ``FROZEN_PROBABILITY`` and holes otherwise; lakes without a path are
    redrawn. Returns an int array of ``ICE``, ``HOLE`` and ``GOAL``.
    """
    while True:
        lake = np.where(rng.random((size, size)) < FROZEN_PROBABILITY, ICE, HOLE)
        lake[0, 0] = ICE
        lake[-1, -1] = GOAL
        if _goal_reachable(lake):
            return lake


def lake_of_seed(size: int, seed: int, hard_mode: bool = False) -> tuple[np.ndarray, bool]:
    """The task of lake seed ``seed``: its lake and, in hard mode, whether actions 1 and 3 swap.

    A seed always gives the same task, so a pool of seeds is a finite set of tasks.
    """
    rng = np.random.default_rng(seed)
    lake = random_lake(size, rng)
    return lake, bool(hard_mode and rng.random() < HARD_MODE_ACTION_SWAP)


@lru_cache(maxsize=8)
def pool_tasks(size: int, hard_mode: bool, train_tasks: int) -> frozenset[tuple[bytes, bool]]:
    """The tasks (lake bytes, action swap) of lake seeds ``0..train_tasks-1``: what held-out draws must avoid.

    Distinct seeds can give the same lake (the all-ice lake is common), so held-out lakes are checked by
    content, not by seed. Cached: every held-out env of a process shares one set.
    """
    tasks = set()
    for seed in range(train_tasks):
        lake, swap = lake_of_seed(size, seed, hard_mode)
        tasks.add((lake.tobytes(), swap))
    return frozenset(tasks)


def _goal_reachable(lake: np.ndarray) -> bool:
    size = lake.shape[0]
    seen = {(0, 0)}
    frontier = deque([(0, 0)])
    while frontier:
        row, col = frontier.popleft()
        if lake[row, col] == GOAL:
            return True
        for d_row, d_col in _MOVES[1:]:
            nxt = (row + d_row, col + d_col)
            if 0 <= nxt[0] < size and 0 <= nxt[1] < size and nxt not in seen and lake[nxt] != HOLE:
                seen.add(nxt)
                frontier.append(nxt)
    return False


class MetaFrozenLake(gymnasium.Env[np.ndarray, np.int64]):
    """k attempts per random lake; reward 1 at the goal; logs ``Episode {i} Success`` per attempt.

    Observation: ``[row / size, col / size, soft_reset_flag, attempt / k_episodes]`` (the last entry only
    with ``show_k_progress``), all in [0, 1]. Actions: 0 stay, 1 down, 2 up, 3 right, 4 left; moves are
    clipped at the lake's edge.

    Args:
        size: side of the square lake.
        k_episodes: attempts per lake.
        hard_mode: per lake, a 50% chance that actions 1 and 3 swap; per observation, a 25% chance that the
            reported position is off by up to one tile per axis; per move, a 33% chance that the tile just
            left becomes a hole until the next attempt (backtracking is punished).
        recover_mode: falling into a hole costs ``-0.1`` and leaves the agent where it was, instead of
            ending the attempt.
        max_episode_steps: step limit of one attempt; None gives ``size**2`` (doubled in hard mode) divided
            by ``1 - slip_chance``, rounded up. Hitting it ends the attempt as a failure.
        show_k_progress: include the attempt counter in the observation.
        slip_chance: chance that a step moves in a uniformly random direction instead of the chosen one.
        render_mode: None, ``"ansi"`` (text) or ``"rgb_array"`` (a top-down picture).
        train_tasks: None draws a fresh random lake per reset; a number restricts lakes to the tasks of lake
            seeds ``0..train_tasks-1`` (:func:`lake_of_seed`), or with ``held_out`` to lakes outside them.
        held_out: draw lakes outside the ``train_tasks`` pool (needs ``train_tasks``).

    Attributes:
        task_seed: the lake seed of the current lake (None for fresh random lakes or before the first reset).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        size: int = 5,
        k_episodes: int = 10,
        hard_mode: bool = False,
        recover_mode: bool = False,
        max_episode_steps: int | None = None,
        show_k_progress: bool = True,
        slip_chance: float = 0.0,
        render_mode: str | None = None,
        train_tasks: int | None = None,
        held_out: bool = False,
    ):
        if train_tasks is not None and train_tasks < 1:
            msg = f"train_tasks must be positive or None, got {train_tasks}."
            raise ValueError(msg)
        if held_out and train_tasks is None:
            msg = "held_out lakes need a train_tasks pool to stay out of; set train_tasks."
            raise ValueError(msg)
        if size < 2 or k_episodes < 1:
            msg = f"need size >= 2 and k_episodes >= 1, got size={size}, k_episodes={k_episodes}."
            raise ValueError(msg)
        if not 0.0 <= slip_chance < 1.0:
            msg = f"slip_chance must be in [0, 1), got {slip_chance}."
            raise ValueError(msg)
        if max_episode_steps is not None and max_episode_steps < 1:
            msg = f"max_episode_steps must be positive or None, got {max_episode_steps}."
            raise ValueError(msg)
        if render_mode not in (None, *self.metadata["render_modes"]):
            msg = f"render_mode must be None, 'ansi' or 'rgb_array', got {render_mode!r}."
            raise ValueError(msg)
        self.size = size
        self.k_episodes = k_episodes
        self.hard_mode = hard_mode
        self.recover_mode = recover_mode
        self.show_k_progress = show_k_progress
        self.slip_chance = slip_chance
        self.render_mode = render_mode
        self.train_tasks = train_tasks
        self.held_out = held_out
        self.task_seed: int | None = None
        if max_episode_steps is None:
            # More steps when moves can fail (slips) or the map fights back (hard mode).
            base = size**2 * (2 if hard_mode else 1)
            max_episode_steps = math.ceil(base / (1.0 - slip_chance))
        self.max_episode_steps = max_episode_steps
        self.action_space = gymnasium.spaces.Discrete(len(_MOVES))
        obs_dim = 4 if show_k_progress else 3
        self.observation_space = gymnasium.spaces.Box(low=0.0, high=1.0, shape=(obs_dim,), dtype=np.float32)
        self.current_k: int | None = None  # None until the first reset

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draws a new lake (and, in hard mode, maybe swapped actions) and starts the first attempt."""
        super().reset(seed=seed)
        self.moves = list(_MOVES)
        if self.train_tasks is None:
            # Unchanged from before task pools existed, draw for draw: fixed-seed runs stay reproducible.
            self.lake = random_lake(self.size, self.np_random)
            swap = self.hard_mode and self.np_random.random() < HARD_MODE_ACTION_SWAP
        else:
            self.task_seed = self._draw_task_seed()
            self.lake, swap = lake_of_seed(self.size, self.task_seed, self.hard_mode)
        if swap:
            self.moves[1], self.moves[3] = self.moves[3], self.moves[1]
        self.current_k = 0
        self.attempt_successes: list[
            bool
        ] = []  # what the picture's band shows, one mark per finished attempt
        self._start_attempt()
        return self._observe(soft_reset=True), {}

    def _draw_task_seed(self) -> int:
        pool = self.train_tasks
        if pool is None:
            msg = "lake seeds are drawn only with a train_tasks pool."
            raise RuntimeError(msg)
        if not self.held_out:
            return int(self.np_random.integers(pool))
        taken = pool_tasks(self.size, self.hard_mode, pool)
        for _ in range(HELD_OUT_TRIES):
            seed = int(self.np_random.integers(pool, LAKE_SEED_LIMIT))
            lake, swap = lake_of_seed(self.size, seed, self.hard_mode)
            if (lake.tobytes(), swap) not in taken:
                return seed
        msg = (
            f"{HELD_OUT_TRIES} held-out draws in a row gave lakes of the train_tasks={pool} pool: it covers "
            f"(nearly) every {self.size}x{self.size} lake. Lower train_tasks or raise size."
        )
        raise ValueError(msg)

    def _start_attempt(self) -> None:
        # Holes broken in hard mode last for one attempt only: each attempt walks on the original lake.
        self.active_lake = self.lake.copy()
        self.row, self.col = 0, 0
        self.attempt_steps = 0

    def step(self, action: int | np.integer) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Moves (maybe slipping), applies the tile's effect, and soft-resets when the attempt ends."""
        if self.current_k is None or self.current_k >= self.k_episodes:
            msg = "Meta-Frozen-Lake rollout is over (or never started); call reset() before step()."
            raise RuntimeError(msg)
        if not is_discrete_action(action, len(_MOVES)):
            msg = f"Meta-Frozen-Lake actions are 0..{len(_MOVES) - 1}; got {action!r}."
            raise ValueError(msg)
        d_row, d_col = self.moves[int(action)]
        if self.slip_chance > 0 and self.np_random.random() < self.slip_chance:
            d_row, d_col = _MOVES[1 + int(self.np_random.integers(4))]
        next_row = min(max(self.row + d_row, 0), self.size - 1)
        next_col = min(max(self.col + d_col, 0), self.size - 1)
        moved = (next_row, next_col) != (self.row, self.col)
        if moved and self.hard_mode and self.np_random.random() < HARD_MODE_BREAK_ICE:
            self.active_lake[self.row, self.col] = HOLE
        self.attempt_steps += 1

        tile = self.active_lake[next_row, next_col]
        reward, attempt_over = 0.0, False
        if tile == GOAL:
            reward, attempt_over = 1.0, True
        elif tile == HOLE and self.recover_mode:
            reward = RECOVER_PENALTY
            next_row, next_col = self.row, self.col
        elif tile == HOLE:
            attempt_over = True
        self.row, self.col = next_row, next_col
        if self.attempt_steps >= self.max_episode_steps:
            attempt_over = True

        info: dict[str, Any] = {}
        if attempt_over:
            # Logged on the step that ends the attempt: after the last one the pool resets this env at once.
            info[f"{AMAGO_ENV_LOG_PREFIX} Episode {self.current_k} Success"] = float(tile == GOAL)
            self.attempt_successes.append(bool(tile == GOAL))
            self.current_k += 1
            self._start_attempt()
        terminated = self.current_k >= self.k_episodes
        return self._observe(soft_reset=attempt_over), reward, terminated, False, info

    def _observe(self, soft_reset: bool) -> np.ndarray:
        row, col = self.row, self.col
        if self.hard_mode and self.np_random.random() < HARD_MODE_NOISY_POSITION:
            row_noise, col_noise = self.np_random.integers(-1, 2, size=2)
            row = min(max(row + int(row_noise), 0), self.size - 1)
            col = min(max(col + int(col_noise), 0), self.size - 1)
        features = [row / self.size, col / self.size, float(soft_reset)]
        if self.show_k_progress:
            if self.current_k is None:
                msg = "Meta-Frozen-Lake has no attempt count before the first reset(); call reset() first."
                raise RuntimeError(msg)
            features.append(self.current_k / self.k_episodes)
        return np.array(features, dtype=np.float32)

    def render(self) -> str | np.ndarray | None:
        """The current attempt's lake as text (``"ansi"``: ``A`` agent, ``H`` hole, ``G`` goal) or RGB pixels.

        The ``"rgb_array"`` picture shows ice (pale blue), holes (dark blue), the goal (green) and the agent (a
        blue disc); the band above the lake has one mark per attempt: green solved, red failed, blue the one
        being played, grey still to come.
        """
        if self.current_k is None:
            return None
        if self.render_mode == "rgb_array":
            return self._picture()
        if self.render_mode != "ansi":
            return None
        rows = [[_TILE_CHARS[int(t)] for t in row] for row in self.active_lake]
        rows[self.row][self.col] = "A"
        header = f"attempt {min(self.current_k + 1, self.k_episodes)}/{self.k_episodes}"
        return header + "\n" + "\n".join(" ".join(r) for r in rows) + "\n"

    def _picture(self) -> np.ndarray:
        picture = grid_frames.GridPicture(self.size, self.size, band=True)
        for (row, col), tile in np.ndenumerate(self.active_lake):
            picture.tile(row, col, _TILE_COLOURS[int(tile)])
        picture.disc(self.row, self.col, grid_frames.AGENT)
        marks = [grid_frames.GOAL if solved else grid_frames.WRONG for solved in self.attempt_successes]
        if len(marks) < self.k_episodes:
            marks.append(grid_frames.AGENT)
        marks += [grid_frames.PENDING] * (self.k_episodes - len(marks))
        picture.band_segments(marks)
        return picture.pixels


class FrozenLakeSuite(BuiltinSuite):
    """The ``frozen_lake`` env suite (env id ``frozen-lake``)."""

    config_type = FrozenLakeConfig
    config: FrozenLakeConfig

    @property
    def env_name(self) -> str:
        """``MetaFrozenLake-k{k}-{n}x{n}-{easy|hard}-{reset|recover}`` (``-slip{p}`` when slippery)."""
        cfg = self.config
        name = (
            f"MetaFrozenLake-k{cfg.k_episodes}-{cfg.size}x{cfg.size}"
            f"-{'hard' if cfg.hard_mode else 'easy'}-{'recover' if cfg.recover_mode else 'reset'}"
        )
        if cfg.slip_chance > 0:
            name += f"-slip{cfg.slip_chance:g}"
        return name

    def task_splits(self) -> TaskSplits:
        """Fresh random lakes for every split, or (``train_tasks``) the seed pool for train/val, outside it for test."""
        pool = self.config.train_tasks
        if pool is None:
            fresh = TaskSet("a fresh random lake per reset (every split draws from all lakes)", kind="fresh")
            return TaskSplits(
                suite=self.config.kind,
                splits={"train": fresh, "val": fresh, "test": fresh},
                hold_out_hint="set env.train_tasks (a pool of training lakes, e.g. 200) to hold lakes out.",
            )
        in_pool = TaskSet(f"lake seeds 0..{pool - 1} (the training pool)", kind="seeds", first=0, count=pool)
        held_out = TaskSet(
            f"lakes of seeds {pool}.. that are not in the training pool (held out)",
            kind="seeds",
            first=pool,
            count=LAKE_SEED_LIMIT - pool,
            held_out=True,
        )
        return TaskSplits(
            suite=self.config.kind,
            splits={"train": in_pool, "val": in_pool, "test": held_out},
            unseen=held_out,
        )

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """One Meta-Frozen-Lake for ``split`` in ``AMAGOEnv`` (test lakes are held out when ``train_tasks`` is set).

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        check_split(split)
        return AMAGOEnv(self.make_gym_env(split), env_name=self.env_name)

    def make_unseen_env(self) -> AMAGOEnv:
        """One Meta-Frozen-Lake on lakes outside the ``train_tasks`` pool.

        Raises:
            UnseenTasksError: ``train_tasks`` is not set (every lake is a fresh random one).
        """
        self.task_splits().tasks("unseen")  # raises, saying to set train_tasks, when nothing is held out
        return AMAGOEnv(self._lake_env(held_out=True), env_name=self.env_name)

    def make_gym_env(self, split: str = "train") -> MetaFrozenLake:
        """A fresh Meta-Frozen-Lake of ``split`` with this suite's options (``rgb_array`` rendering, for ``amago eval
        --video``); the split matters only with ``train_tasks`` (test: held-out lakes)."""
        check_split(split)
        return self._lake_env(held_out=self.config.train_tasks is not None and split == "test")

    def _lake_env(self, held_out: bool) -> MetaFrozenLake:
        cfg = self.config
        return MetaFrozenLake(
            size=cfg.size,
            k_episodes=cfg.k_episodes,
            hard_mode=cfg.hard_mode,
            recover_mode=cfg.recover_mode,
            max_episode_steps=cfg.max_episode_steps,
            show_k_progress=cfg.show_k_progress,
            slip_chance=cfg.slip_chance,
            render_mode="rgb_array",
            train_tasks=cfg.train_tasks,
            held_out=held_out,
        )
