"""The numpy suites draw ``rgb_array`` frames: the right shape and dtype, the agent where the env says it is."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from amago_envs.suites import grid_frames
from amago_envs.suites.frozen_lake import MetaFrozenLake
from amago_envs.suites.key_door import RoomKeyDoor
from amago_envs.suites.mazerunner import MazeRunner
from amago_envs.suites.specs import FROZEN_LAKE, KEY_DOOR, MAZERUNNER, TMAZE
from amago_envs.suites.tmaze import TMaze

TMAZE_ROW = {1: 0, 0: 1, -1: 2}  # T-Maze draws y = +1 on top


def tmaze_cell(env: TMaze) -> tuple[int, int]:
    return TMAZE_ROW[env.y], env.x


ENVS: dict[
    str, tuple[Callable[[], gymnasium.Env], Callable[[gymnasium.Env], tuple[int, int]], tuple[int, int]]
] = {
    # name: (env in rgb_array mode, the agent's (row, col) in the picture, the grid's (rows, cols))
    "tmaze": (lambda: TMaze(corridor_length=6, render_mode="rgb_array"), tmaze_cell, (3, 7)),
    "frozen-lake": (
        lambda: MetaFrozenLake(size=5, k_episodes=3, render_mode="rgb_array"),
        lambda env: (env.row, env.col),
        (5, 5),
    ),
    "key-door": (
        lambda: RoomKeyDoor(size=7, meta_rollout_horizon=60, render_mode="rgb_array"),
        lambda env: (int(env.pos[0]), int(env.pos[1])),
        (7, 7),
    ),
    "mazerunner": (
        lambda: MazeRunner(maze_dim=11, time_limit=60, render_mode="rgb_array"),
        lambda env: tuple(env.pos),
        (11, 11),
    ),
}


def agent_centre(frame: np.ndarray, rows: int, cols: int) -> tuple[float, float]:
    """The mean pixel (y, x) of the agent's colour inside the grid (the band above it may use the colour too)."""
    cell = frame.shape[1] // cols
    top = frame.shape[0] - rows * cell
    ys, xs = np.nonzero((frame[top:] == grid_frames.AGENT).all(axis=-1))
    assert len(ys), "no agent in the picture"
    return top + ys.mean(), xs.mean()


def expected_centre(frame: np.ndarray, cell_rc: tuple[int, int], rows: int, cols: int) -> tuple[float, float]:
    cell = frame.shape[1] // cols
    top = frame.shape[0] - rows * cell
    row, col = cell_rc
    return top + (row + 0.5) * cell - 0.5, (col + 0.5) * cell - 0.5


@pytest.mark.parametrize("name", list(ENVS))
def test_frames_are_rgb_uint8_with_even_sides_and_none_before_reset(name: str) -> None:
    make, _, _ = ENVS[name]
    env = make()
    assert env.render() is None
    env.reset(seed=0)
    frame = env.render()
    assert isinstance(frame, np.ndarray)
    assert frame.dtype == np.uint8
    assert frame.ndim == 3
    assert frame.shape[2] == 3
    assert frame.shape[0] % 2 == 0
    assert frame.shape[1] % 2 == 0
    env.step(env.action_space.sample())
    assert env.render().shape == frame.shape  # one size for the whole episode (a video needs it)


@pytest.mark.parametrize("name", list(ENVS))
def test_gymnasium_checker_accepts_rgb_array_mode(name: str) -> None:
    make, _, _ = ENVS[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(make())
    # "not having a spec": any env built without gymnasium.make; it is about the test, not the env.
    unexpected = [str(w.message) for w in caught if "not having a spec" not in str(w.message)]
    assert unexpected == []


@pytest.mark.parametrize("name", list(ENVS))
def test_the_agent_is_drawn_where_it_is_and_moves_with_it(name: str) -> None:
    make, cell_of, (rows, cols) = ENVS[name]
    moved = 0
    for action in range(int(make().action_space.n)):
        env = make()
        env.reset(seed=4)
        before_cell, before = cell_of(env), env.render()
        env.step(action)
        after_cell, after = cell_of(env), env.render()
        for frame, cell_rc in ((before, before_cell), (after, after_cell)):
            np.testing.assert_allclose(
                agent_centre(frame, rows, cols), expected_centre(frame, cell_rc, rows, cols), atol=0.6
            )
        if after_cell != before_cell:
            moved += 1
            assert not np.array_equal(before, after)
    assert moved >= 1  # some action moved the agent (and the picture with it)


def test_tmaze_shows_the_goal_signal_and_which_end_is_right() -> None:
    pictures = {}
    for seed in range(20):
        env = TMaze(corridor_length=4, render_mode="rgb_array")
        env.reset(seed=seed)
        pictures.setdefault(env.goal_y, env.render())
    assert set(pictures) == {-1, 1}
    up, down = pictures[1], pictures[-1]
    cell = up.shape[1] // 5
    top_end = (slice(cell // 4, cell - cell // 4), slice(4 * cell + cell // 4, 5 * cell - cell // 4))
    bottom_end = (slice(2 * cell + cell // 4, 3 * cell - cell // 4), top_end[1])
    assert (up[top_end] == grid_frames.GOAL).all()
    assert (up[bottom_end] == grid_frames.WRONG).all()
    assert (down[top_end] == grid_frames.WRONG).all()
    assert (down[bottom_end] == grid_frames.GOAL).all()
    # The oracle cell (column 0 of the corridor row) carries the signal: the half on the goal's side is green.
    oracle_corner_up = up[cell + 2, 2]
    oracle_corner_down = down[cell + 2, 2]
    assert tuple(oracle_corner_up) == grid_frames.GOAL
    assert tuple(oracle_corner_down) == grid_frames.FLOOR


def test_frozen_lake_band_marks_each_finished_attempt() -> None:
    env = MetaFrozenLake(size=4, k_episodes=3, render_mode="rgb_array", max_episode_steps=1)
    env.reset(seed=0)
    first = env.render()
    env.step(0)  # stand still: the one-step attempt fails
    second = env.render()
    band = second.shape[0] - 4 * (second.shape[1] // 4)
    assert band > 0
    assert not np.array_equal(first[:band], second[:band])
    assert (second[1 : band - 1] == grid_frames.WRONG).all(axis=-1).any()


@pytest.mark.parametrize(
    ("spec", "options"),
    [(TMAZE, {}), (FROZEN_LAKE, {}), (KEY_DOOR, {}), (MAZERUNNER, {}), (MAZERUNNER, {"relabel_info": True})],
    ids=["tmaze", "frozen-lake", "key-door", "mazerunner", "mazerunner-relabel"],
)
def test_suites_build_envs_that_render_frames(spec, options) -> None:
    env = spec.build(options).make_env("test")
    env.reset(seed=1)
    frame = env.render()
    assert isinstance(frame, np.ndarray)
    assert frame.dtype == np.uint8
    assert frame.shape[2] == 3
