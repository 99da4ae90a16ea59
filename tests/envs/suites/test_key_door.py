"""Dark Key-To-Door dynamics in a fixed 3x3 room: key then door, the restart step, both horizons."""

from __future__ import annotations

import numpy as np
import pytest

from amago_envs.suites.key_door import RoomKeyDoor

# Action -> (dx, dy): 0 (0,-1), 1 (-1,0), 2 (0,+1), 3 (+1,0), 4 stay.
Y_DOWN, X_DOWN, Y_UP, X_UP, STAY = 0, 1, 2, 3, 4
DOORS = "AMAGO_LOG_METRIC Doors Opened"
ALL_DIRECTIONS = [(0, -1), (-1, 0), (0, 1), (1, 0), (0, 0)]


def room(**overrides) -> RoomKeyDoor:
    """Start (0,0), key (0,2), door (2,0) in a 3x3 room unless overridden."""
    options = {
        "size": 3,
        "start_location": (0, 0),
        "key_location": (0, 2),
        "goal_location": (2, 0),
        "max_episode_steps": 10,
        "meta_rollout_horizon": 100,
    }
    options.update(overrides)
    return RoomKeyDoor(**options)


def walk(env: RoomKeyDoor, actions: list[int]) -> tuple[list[np.ndarray], list[float]]:
    observations, rewards = [], []
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        assert not terminated
        assert not truncated
        observations.append(obs)
        rewards.append(reward)
    return observations, rewards


def test_key_then_door_then_a_zero_reward_restart_step() -> None:
    env = room()
    obs, _ = env.reset(seed=0)
    np.testing.assert_allclose(obs, [0, 0, 0, 0])

    observations, rewards = walk(env, [Y_UP, Y_UP])
    assert rewards == [0.0, 1.0]  # the key
    np.testing.assert_allclose(observations[-1], [0, 2 / 3, 1, 2 / 10])

    observations, rewards = walk(env, [Y_DOWN, Y_DOWN, X_UP, X_UP])
    assert rewards == [0.0, 0.0, 0.0, 1.0]  # the door, with the key
    np.testing.assert_allclose(observations[-1], [2 / 3, 0, 1, 6 / 10])

    # Whatever the action, the next step returns to the start without the key and pays nothing.
    observations, rewards = walk(env, [X_UP])
    assert rewards == [0.0]
    np.testing.assert_allclose(observations[-1], [0, 0, 0, 0])

    # The same room again: the same route pays again.
    _, rewards = walk(env, [Y_UP, Y_UP, Y_DOWN, Y_DOWN, X_UP, X_UP])
    assert rewards == [0, 1, 0, 0, 0, 1]


def test_door_without_key_pays_nothing_and_the_key_pays_once() -> None:
    env = room()
    env.reset(seed=0)
    _, rewards = walk(env, [X_UP, X_UP, STAY])
    assert rewards == [0.0, 0.0, 0.0]
    _, rewards = walk(env, [X_DOWN, X_DOWN, Y_UP, Y_UP, Y_DOWN, Y_UP, STAY])
    assert rewards == [0, 0, 0, 1, 0, 0, 0]


def test_attempt_horizon_sends_the_agent_back_after_an_extra_step() -> None:
    env = room(max_episode_steps=3)
    env.reset(seed=0)
    observations, rewards = walk(env, [Y_UP, Y_UP, X_UP])
    assert rewards == [0.0, 1.0, 0.0]
    np.testing.assert_allclose(observations[-1], [1 / 3, 2 / 3, 1, 1])  # time runs out with the key held
    observations, _ = walk(env, [X_UP])  # the transition step
    np.testing.assert_allclose(observations[-1], [0, 0, 0, 0])


def test_room_horizon_ends_the_rollout_and_logs_doors_opened() -> None:
    env = room(meta_rollout_horizon=15)
    env.reset(seed=0)
    route = [Y_UP, Y_UP, Y_DOWN, Y_DOWN, X_UP, X_UP, STAY]  # one solve plus the restart step
    walk(env, route * 2)
    _, _, terminated, truncated, info = env.step(STAY)
    assert (terminated, truncated) == (True, True)  # step 15
    assert info == {DOORS: 2.0}
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(STAY)


def test_moves_are_clipped_at_the_walls() -> None:
    env = room()
    env.reset(seed=0)
    observations, _ = walk(env, [Y_DOWN, X_DOWN])
    np.testing.assert_allclose(observations[-1][:2], [0, 0])


def test_light_room_shows_door_and_key() -> None:
    env = room(dark=False)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == obs.shape == (8,)
    np.testing.assert_allclose(obs[4:], [2 / 3, 0, 0, 2 / 3])  # door (x, y), then key (x, y)
    assert room().observation_space.shape == (4,)


def test_random_rooms_follow_the_seed() -> None:
    layouts = set()
    for seed in range(30):
        env = RoomKeyDoor()
        env.reset(seed=seed)
        again = RoomKeyDoor()
        again.reset(seed=seed)
        layout = (tuple(env.start), tuple(env.key), tuple(env.goal))
        assert layout == (tuple(again.start), tuple(again.key), tuple(again.goal))
        assert all(0 <= c < 9 for cell in layout for c in cell)
        layouts.add(layout)
    assert len(layouts) == 30


def test_randomized_actions_shuffle_directions_per_room() -> None:
    mappings = set()
    for seed in range(20):
        env = room(randomize_actions=True)
        env.reset(seed=seed)
        mappings.add(tuple(env.moves))
        assert sorted(env.moves) == sorted(ALL_DIRECTIONS)
    assert len(mappings) > 5
    fixed = room()
    fixed.reset(seed=0)
    assert fixed.moves == ALL_DIRECTIONS


def test_invalid_locations_fail_clearly() -> None:
    with pytest.raises(ValueError, match="key_location"):
        room(key_location=(3, 0))
    with pytest.raises(ValueError, match="start_location"):
        room(start_location="center")
