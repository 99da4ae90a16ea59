"""MazeRunner: maze generation, goals in order, the relabel-info observations, time limit, rewired actions."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from amago_envs.suites.mazerunner import (
    DONE_GOAL,
    FREE,
    WALL,
    MazeRunner,
    MazeRunnerRelabelInfo,
    random_maze,
    reachable_cells,
)

WEST, NORTH, EAST, SOUTH, STAY = 0, 1, 2, 3, 4
DELTAS = {WEST: (0, -1), NORTH: (-1, 0), EAST: (0, 1), SOUTH: (1, 0)}


def route(maze: np.ndarray, start: tuple[int, int], goal: tuple[int, int]) -> list[int]:
    """Shortest list of (un-rewired) actions from ``start`` to ``goal``, by breadth-first search."""
    previous: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {start: None}
    frontier = deque([start])
    while frontier:
        cell = frontier.popleft()
        if cell == goal:
            break
        for action, (d_row, d_col) in DELTAS.items():
            nxt = (cell[0] + d_row, cell[1] + d_col)
            if nxt not in previous and maze[nxt] == FREE:
                previous[nxt] = (cell, action)
                frontier.append(nxt)
    actions = []
    cell = goal
    while previous[cell] is not None:
        cell, action = previous[cell]
        actions.append(action)
    return actions[::-1]


def _passes(start: tuple[int, int], actions: list[int], cell: tuple[int, int]) -> bool:
    row, col = start
    for action in actions:
        row, col = row + DELTAS[action][0], col + DELTAS[action][1]
        if (row, col) == cell:
            return True
    return False


def relabel_env(**options) -> MazeRunnerRelabelInfo:
    return MazeRunnerRelabelInfo(MazeRunner(goal_in_obs=False, **options))


def test_mazes_are_odd_walled_and_goals_reachable() -> None:
    for seed in range(20):
        env = MazeRunner(maze_dim=10, num_goals=4)
        env.reset(seed=seed)
        maze = env.maze
        assert maze.shape == (11, 11)
        border = np.concatenate([maze[0], maze[-1], maze[:, 0], maze[:, -1]])
        assert (border == WALL).all()
        assert env.start == (9, 5)
        reachable = set(reachable_cells(maze, env.start))
        assert len(set(env.goals)) == 4
        assert env.start not in env.goals
        assert set(env.goals) <= reachable


def test_random_maze_follows_the_generator() -> None:
    a = random_maze(15, np.random.default_rng(4))
    b = random_maze(15, np.random.default_rng(4))
    c = random_maze(15, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert set(np.unique(a)) == {FREE, WALL}


def test_start_sits_in_a_walled_alley() -> None:
    env = MazeRunner(maze_dim=11)
    obs, _ = env.reset(seed=0)
    # West, east and south of the start are walls; north runs at least through the open spawn rows.
    west, north, east, south = obs[2:6] * 11
    assert (west, east, south) == (0, 0, 0)
    assert north >= 3
    np.testing.assert_allclose(obs[:2], [9 / 11, 5 / 11])
    assert obs[6] == 0.0


def test_goals_pay_in_order_only() -> None:
    env = relabel_env(maze_dim=11, num_goals=3, time_limit=500)
    # A maze whose shortest route to the second goal avoids the first, so that goal order is what is tested.
    for seed in range(100):
        obs, _ = env.reset(seed=seed)
        inner = env.unwrapped
        goals = [tuple(g) for g in obs["goals"]]
        if not _passes(inner.start, route(inner.maze, inner.start, goals[1]), goals[0]):
            break
    assert goals == inner.goals

    # Visiting the second goal first pays nothing.
    actions = route(inner.maze, inner.start, goals[1])
    for action in actions:
        obs, reward, terminated, _, info = env.step(action)
        assert reward == 0.0
        assert not terminated
        assert not info["success"]

    position = goals[1]
    for index, goal in enumerate(goals):
        actions = route(inner.maze, position, goal)
        rewards = []
        for action in actions:
            obs, reward, terminated, truncated, info = env.step(action)
            rewards.append(reward)
        assert rewards[-1] == 1.0
        assert info["success"]
        assert sum(rewards) == 1.0  # passing over a later goal on the way does not count
        np.testing.assert_array_equal(obs["achieved"], [goal])
        # Reached goals read -1 in the goal sequence; the rest keep their order.
        expected = np.array([(DONE_GOAL, DONE_GOAL)] * (index + 1) + goals[index + 1 :], dtype=np.int32)
        np.testing.assert_array_equal(obs["goals"], expected)
        assert terminated == (index == 2)
        assert not truncated
        position = goal
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(STAY)


def test_relabel_observation_matches_the_flat_one() -> None:
    env = relabel_env(maze_dim=9, num_goals=2, time_limit=20)
    obs, _ = env.reset(seed=7)
    assert set(obs) == {"obs", "achieved", "goals"}
    assert obs["obs"].shape == (7,)
    assert obs["achieved"].shape == (1, 2)
    assert obs["goals"].shape == (2, 2)
    assert obs["achieved"].dtype == obs["goals"].dtype == np.int32
    np.testing.assert_array_equal(obs["achieved"], [env.unwrapped.start])
    np.testing.assert_allclose(obs["obs"][:2], np.array(env.unwrapped.start) / 9)

    flat = MazeRunner(maze_dim=9, num_goals=2, time_limit=20)
    flat_obs, _ = flat.reset(seed=7)
    assert flat_obs.shape == (7 + 4,)
    np.testing.assert_allclose(flat_obs[:7], obs["obs"])
    np.testing.assert_allclose(flat_obs[7:], obs["goals"].flatten() / 9)


def test_time_limit_terminates_and_truncates() -> None:
    env = MazeRunner(time_limit=5)
    env.reset(seed=0)
    for t in range(1, 6):
        obs, reward, terminated, truncated, _ = env.step(STAY)
        assert reward == 0.0
        assert terminated == truncated == (t == 5)
        assert obs[6] == pytest.approx(t / 5)


def test_walls_block_moves() -> None:
    env = MazeRunner()
    obs, _ = env.reset(seed=0)
    for action in (WEST, EAST, SOUTH):
        moved, *_ = env.step(action)
        np.testing.assert_array_equal(moved[:2], obs[:2])


def test_fewer_goals_pad_the_front_of_the_sequence() -> None:
    counts = set()
    for seed in range(30):
        env = relabel_env(num_goals=3, min_num_goals=1)
        obs, _ = env.reset(seed=seed)
        n = len(env.unwrapped.goals)
        counts.add(n)
        assert (obs["goals"][: 3 - n] == DONE_GOAL).all()
        assert (obs["goals"][3 - n :] >= 0).all()
    assert counts == {1, 2, 3}


def test_rewired_actions_change_per_episode() -> None:
    permutations = set()
    for seed in range(20):
        env = MazeRunner(randomized_action_space=True)
        env.reset(seed=seed)
        permutations.add(tuple(map(tuple, env.moves)))
    assert len(permutations) > 5
    plain = MazeRunner()
    plain.reset(seed=0)
    np.testing.assert_array_equal(plain.moves, [[0, -1], [-1, 0], [0, 1], [1, 0], [0, 0]])


def test_invalid_use_fails_clearly() -> None:
    with pytest.raises(ValueError, match="min_num_goals"):
        MazeRunner(num_goals=2, min_num_goals=3)
    with pytest.raises(ValueError, match="maze_dim >= 7"):
        MazeRunner(maze_dim=5)
    with pytest.raises(TypeError, match="wraps a MazeRunner"):
        MazeRunnerRelabelInfo(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="too few for 40 distinct goals"):
        MazeRunner(maze_dim=7, num_goals=40).reset(seed=0)
