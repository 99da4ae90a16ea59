"""T-Maze dynamics, checked by hand: when the reward comes, what the agent can see, how long an episode is."""

from __future__ import annotations

import numpy as np
import pytest

from amago_envs.suites.tmaze import DOWN, LEFT, RIGHT, UP, TMaze

PENALTY = -0.1


def seeds_for_each_side() -> dict[int, int]:
    """One seed per goal side, so that tests cover both."""
    found: dict[int, int] = {}
    for seed in range(50):
        env = TMaze(corridor_length=3)
        obs, _ = env.reset(seed=seed)
        found.setdefault(int(obs[1]), seed)
        if len(found) == 2:
            return found
    raise AssertionError("50 seeds never produced both goal sides")


SIDE_SEEDS = seeds_for_each_side()


def run(env: TMaze, actions: list[int]) -> tuple[list[np.ndarray], list[float], list[bool], list[bool]]:
    observations, rewards, terminateds, truncateds = [], [], [], []
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        assert info == {}
        observations.append(obs)
        rewards.append(reward)
        terminateds.append(terminated)
        truncateds.append(truncated)
    return observations, rewards, terminateds, truncateds


@pytest.mark.parametrize("side", [1, -1])
def test_passive_reward_only_at_the_end_on_the_right_side(side: int) -> None:
    env = TMaze(corridor_length=5, penalty=PENALTY)
    first, _ = env.reset(seed=SIDE_SEEDS[side])
    np.testing.assert_array_equal(first, [0.0, side])  # the oracle shows the goal side at the start

    turn = UP if side == 1 else DOWN
    observations, rewards, terminateds, truncateds = run(env, [RIGHT] * 5 + [turn])
    assert rewards == [0.0] * 5 + [1.0]
    assert terminateds == truncateds == [False] * 5 + [True]  # episode length = corridor + 1
    np.testing.assert_array_equal(observations[-2], [1.0, 0.0])  # the junction
    np.testing.assert_array_equal(observations[-1], [1.0, side])

    env.reset(seed=SIDE_SEEDS[side])
    wrong = DOWN if side == 1 else UP
    _, rewards, _, _ = run(env, [RIGHT] * 5 + [wrong])
    assert rewards[-1] == 0.0


def test_goal_reward_scales_and_is_paid_once() -> None:
    env = TMaze(corridor_length=2, goal_reward=4.0)
    env.reset(seed=SIDE_SEEDS[1])
    _, rewards, _, _ = run(env, [RIGHT, RIGHT, UP])
    assert rewards == [0.0, 0.0, 4.0]
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(RIGHT)


def test_corridor_observations_hide_the_goal_side() -> None:
    trajectories = {}
    for side, seed in SIDE_SEEDS.items():
        env = TMaze(corridor_length=6)
        env.reset(seed=seed)
        observations, _, _, _ = run(env, [RIGHT] * 6)
        trajectories[side] = np.stack(observations)
    # After the first observation both goal sides produce identical observation sequences.
    np.testing.assert_array_equal(trajectories[1], trajectories[-1])
    np.testing.assert_array_equal(trajectories[1][:-1], np.zeros((5, 2)))


def test_oracle_shows_the_goal_only_on_the_first_visit() -> None:
    env = TMaze(corridor_length=4)
    env.reset(seed=SIDE_SEEDS[1])
    observations, _, _, _ = run(env, [LEFT, RIGHT, LEFT])  # bump the wall, leave, come back
    for obs in observations:
        np.testing.assert_array_equal(obs, [0.0, 0.0])


def test_alt_penalty_for_every_action_but_right_except_the_last() -> None:
    env = TMaze(corridor_length=4, penalty=PENALTY)
    env.reset(seed=SIDE_SEEDS[-1])
    _, rewards, _, _ = run(env, [UP, RIGHT, LEFT, DOWN, UP])
    # Walls block UP/DOWN in the corridor, yet they still cost the penalty; the last step pays no penalty.
    assert rewards == [PENALTY, 0.0, PENALTY, PENALTY, 0.0]


def test_active_needs_a_step_back_to_read_the_goal() -> None:
    side = 1
    env = TMaze(corridor_length=3, active=True, penalty=PENALTY)
    first, _ = env.reset(seed=SIDE_SEEDS[side])
    np.testing.assert_array_equal(first, [0.0, 0.0])  # the start is one cell right of the oracle
    assert env.episode_length == 3 + 3

    observations, rewards, terminateds, truncateds = run(env, [LEFT, RIGHT, RIGHT, RIGHT, RIGHT, UP])
    np.testing.assert_array_equal(observations[0], [0.0, side])
    # The detour to the oracle is free; the episode lasts corridor + 3 steps.
    assert rewards == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert terminateds == truncateds == [False] * 5 + [True]


def test_active_penalty_starts_after_the_oracle_step() -> None:
    env = TMaze(corridor_length=3, active=True, penalty=PENALTY)
    env.reset(seed=0)
    _, rewards, _, _ = run(env, [LEFT, LEFT])
    assert rewards == [0.0, PENALTY]


@pytest.mark.parametrize(("active", "length"), [(False, 8), (True, 10)])
def test_episode_length_with_any_actions(active: bool, length: int) -> None:
    env = TMaze(corridor_length=7, active=active)
    env.reset(seed=1)
    env.action_space.seed(1)
    for t in range(1, length + 1):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        assert terminated == truncated == (t == length)


def test_both_goal_sides_occur_and_follow_the_seed() -> None:
    sides = []
    for seed in range(40):
        env = TMaze(corridor_length=2)
        obs, _ = env.reset(seed=seed)
        again, _ = TMaze(corridor_length=2).reset(seed=seed)
        np.testing.assert_array_equal(obs, again)
        sides.append(obs[1])
    assert set(sides) == {-1.0, 1.0}


def test_invalid_use_fails_clearly() -> None:
    env = TMaze()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(RIGHT)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="0 \\(right\\)"):
        env.step(4)
    with pytest.raises(ValueError, match="penalty must be <= 0"):
        TMaze(penalty=1.0)
    with pytest.raises(ValueError, match="corridor_length"):
        TMaze(corridor_length=0)
