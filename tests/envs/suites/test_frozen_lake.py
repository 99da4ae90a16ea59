"""Meta-Frozen-Lake on hand-drawn lakes: attempts, soft resets, the success metric, slips, hard mode."""

from __future__ import annotations

import numpy as np
import pytest

from amago_envs.suites import frozen_lake
from amago_envs.suites.frozen_lake import GOAL, HOLE, ICE, MetaFrozenLake, random_lake

STAY, DOWN, UP, RIGHT, LEFT = 0, 1, 2, 3, 4
SUCCESS = "AMAGO_LOG_METRIC Episode {} Success"

# (0,0) is the start, (2,2) the goal.
#   . . H
#   . H .
#   . . G
SMALL_LAKE = np.array([[ICE, ICE, HOLE], [ICE, HOLE, ICE], [ICE, ICE, GOAL]])
ALL_ICE = np.array([[ICE] * 4] * 3 + [[ICE, ICE, ICE, GOAL]])


@pytest.fixture
def fixed_lake(monkeypatch: pytest.MonkeyPatch):
    """Makes every reset draw the given lake instead of a random one."""

    def use(lake: np.ndarray) -> None:
        monkeypatch.setattr(frozen_lake, "random_lake", lambda size, rng: lake.copy())

    return use


def test_attempts_soft_resets_and_success_metric(fixed_lake) -> None:
    fixed_lake(SMALL_LAKE)
    env = MetaFrozenLake(size=3, k_episodes=2)
    obs, _ = env.reset(seed=0)
    np.testing.assert_allclose(obs, [0, 0, 1, 0])  # at the start, reset flag up, attempt 0 of 2

    obs, reward, terminated, truncated, info = env.step(RIGHT)
    np.testing.assert_allclose(obs, [0, 1 / 3, 0, 0])
    assert (reward, terminated, truncated, info) == (0.0, False, False, {})

    # Into the hole: the attempt fails, the agent is back at the start of the same lake.
    obs, reward, terminated, truncated, info = env.step(RIGHT)
    np.testing.assert_allclose(obs, [0, 0, 1, 1 / 2])
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info == {SUCCESS.format(0): 0.0}

    for action in (DOWN, DOWN, RIGHT):
        obs, reward, terminated, _, info = env.step(action)
        assert (reward, terminated, info) == (0.0, False, {})
    obs, reward, terminated, truncated, info = env.step(RIGHT)
    assert reward == 1.0
    assert info == {SUCCESS.format(1): 1.0}
    # The second of two attempts ends the rollout; the returned observation is the soft-reset one.
    assert (terminated, truncated) == (True, False)
    np.testing.assert_allclose(obs, [0, 0, 1, 1])
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(STAY)


def test_recover_mode_penalises_and_keeps_the_agent_in_place(fixed_lake) -> None:
    fixed_lake(SMALL_LAKE)
    env = MetaFrozenLake(size=3, k_episodes=1, recover_mode=True)
    env.reset(seed=0)
    env.step(RIGHT)
    obs, reward, terminated, _, info = env.step(RIGHT)
    assert (reward, terminated, info) == (-0.1, False, {})
    np.testing.assert_allclose(obs, [0, 1 / 3, 0, 0])  # still next to the hole, no reset flag


def test_attempt_step_limit_ends_the_attempt_as_a_failure(fixed_lake) -> None:
    fixed_lake(SMALL_LAKE)
    env = MetaFrozenLake(size=3, k_episodes=2, max_episode_steps=3)
    env.reset(seed=0)
    assert env.step(STAY)[4] == {}
    assert env.step(STAY)[4] == {}
    obs, reward, terminated, _, info = env.step(STAY)
    assert (reward, terminated, info) == (0.0, False, {SUCCESS.format(0): 0.0})
    assert obs[2] == 1.0


@pytest.mark.parametrize(
    ("options", "limit"),
    [
        ({"size": 5}, 25),
        ({"size": 5, "hard_mode": True}, 50),
        ({"size": 4, "slip_chance": 0.5}, 32),
        ({"size": 5, "hard_mode": True, "slip_chance": 0.2}, 63),
        ({"size": 5, "max_episode_steps": 7}, 7),
    ],
)
def test_default_attempt_step_limit(options, limit) -> None:
    assert MetaFrozenLake(**options).max_episode_steps == limit


def test_hidden_k_progress_drops_the_counter(fixed_lake) -> None:
    fixed_lake(SMALL_LAKE)
    env = MetaFrozenLake(size=3, show_k_progress=False)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == obs.shape == (3,)


def test_no_slip_means_stay_stays_and_slips_move(fixed_lake) -> None:
    fixed_lake(ALL_ICE)
    steady = MetaFrozenLake(size=4, k_episodes=1, max_episode_steps=100)
    steady.reset(seed=0)
    for _ in range(30):
        obs, *_ = steady.step(STAY)
        np.testing.assert_allclose(obs[:2], [0, 0])

    slippery = MetaFrozenLake(size=4, k_episodes=1, max_episode_steps=100, slip_chance=0.9)
    slippery.reset(seed=0)
    positions = {tuple(slippery.step(STAY)[0][:2]) for _ in range(10)}
    assert len(positions) > 1


def test_slip_rate_matches_slip_chance(fixed_lake) -> None:
    # A slip draws one of four directions; from the top-left corner two of them move the agent.
    fixed_lake(ALL_ICE)
    moved = 0
    trials = 400
    env = MetaFrozenLake(size=4, k_episodes=1, max_episode_steps=10_000, slip_chance=0.5)
    env.reset(seed=3)
    for _ in range(trials):
        env.row, env.col = 0, 0
        obs, *_ = env.step(STAY)
        moved += tuple(obs[:2]) != (0.0, 0.0)
    assert moved / trials == pytest.approx(0.5 * 0.5, abs=0.07)


def test_hard_mode_swaps_actions_for_about_half_the_lakes(fixed_lake) -> None:
    fixed_lake(ALL_ICE)
    swapped = 0
    for seed in range(200):
        env = MetaFrozenLake(size=4, hard_mode=True)
        env.reset(seed=seed)
        swapped += env.moves[1] == (0, 1)
    assert 70 < swapped < 130


def test_hard_mode_breaks_the_ice_behind_the_agent(fixed_lake) -> None:
    fixed_lake(ALL_ICE)
    env = MetaFrozenLake(size=4, k_episodes=1, hard_mode=True, max_episode_steps=1_000)
    env.reset(seed=0)
    env.moves = list(frozen_lake._MOVES)  # undo a possible swap: this test walks right and left
    # Pacing between two tiles must fall through a broken one soon (each move breaks ice with p = 0.33).
    for step in range(60):
        *_, terminated, _, info = env.step(RIGHT if step % 2 == 0 else LEFT)
        if info:
            assert info == {SUCCESS.format(0): 0.0}
            assert terminated
            break
    else:
        pytest.fail("60 moves in hard mode never broke the ice behind the agent")
    # Broken ice lasts one attempt: the lake itself is untouched.
    np.testing.assert_array_equal(env.lake, ALL_ICE)


def test_hard_mode_position_readings_are_noisy(fixed_lake) -> None:
    fixed_lake(ALL_ICE)
    env = MetaFrozenLake(size=4, k_episodes=1, hard_mode=True, max_episode_steps=1_000)
    env.reset(seed=0)
    env.step(DOWN if env.moves[1] == (1, 0) else RIGHT)  # off the corner, so noise can go both ways
    readings = {tuple(env.step(STAY)[0][:2]) for _ in range(100)}
    assert len(readings) > 1


def test_easy_mode_reads_the_true_position(fixed_lake) -> None:
    fixed_lake(ALL_ICE)
    env = MetaFrozenLake(size=4, k_episodes=1, max_episode_steps=1_000)
    env.reset(seed=0)
    env.step(DOWN)
    readings = {tuple(env.step(STAY)[0][:2]) for _ in range(50)}
    assert readings == {(0.25, 0.0)}


def test_random_lakes_are_solvable_and_differ_by_seed() -> None:
    lakes = []
    for seed in range(100):
        lake = random_lake(6, np.random.default_rng(seed))
        assert lake[0, 0] == ICE
        assert lake[-1, -1] == GOAL
        assert frozen_lake._goal_reachable(lake)
        lakes.append(lake)
    assert len({lake.tobytes() for lake in lakes}) > 90
    assert any((lake == HOLE).any() for lake in lakes)


def test_a_new_lake_per_reset_and_the_same_lake_across_attempts() -> None:
    env = MetaFrozenLake(size=5, k_episodes=3)
    env.reset(seed=11)
    first = env.lake.copy()
    for _ in range(40):
        *_, terminated, _, _ = env.step(int(env.np_random.integers(5)))
        np.testing.assert_array_equal(env.lake, first)
        if terminated:
            break
    env.reset()  # no seed: the generator carries on, so the next lake is a new draw
    assert not np.array_equal(env.lake, first)


def test_invalid_use_fails_clearly() -> None:
    with pytest.raises(ValueError, match="slip_chance"):
        MetaFrozenLake(slip_chance=1.0)
    env = MetaFrozenLake()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(STAY)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions are 0\.\.4"):
        env.step(5)
