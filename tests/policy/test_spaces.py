"""``spaces.json``: every space AMAGOEnv allows survives the JSON round trip, and runs record theirs."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from amago_core.rollout.spaces import PolicySpaces, SpaceRecordError, space_from_json, space_to_json

SPACES = [
    gym.spaces.Box(0, 255, (4, 4, 3), np.uint8),
    gym.spaces.Box(-np.inf, np.inf, (5,), np.float32),
    gym.spaces.Box(
        np.array([-1.0, 0.0, -np.inf], dtype=np.float32), np.array([1.0, 2.5, 7.0], dtype=np.float32)
    ),
    gym.spaces.Discrete(4, start=-2),
    gym.spaces.MultiBinary(6),
    gym.spaces.MultiDiscrete([3, 5], start=[1, 0]),
    gym.spaces.Dict({"image": gym.spaces.Box(0, 1, (2, 2), np.float32), "task": gym.spaces.Discrete(3)}),
]


@pytest.mark.parametrize("space", SPACES, ids=[type(s).__name__ for s in SPACES])
def test_spaces_round_trip_through_standard_json(space):
    text = json.dumps(space_to_json(space), allow_nan=False)  # no bare Infinity/NaN: standard JSON
    assert space_from_json(json.loads(text)) == space


def test_uniform_bounds_are_stored_once():
    assert space_to_json(SPACES[0])["low"] == 0.0
    assert space_to_json(SPACES[1])["high"] == "inf"


def test_unsupported_or_damaged_records_are_refused():
    with pytest.raises(SpaceRecordError, match="cannot record a Text space"):
        space_to_json(gym.spaces.Text(5))
    with pytest.raises(SpaceRecordError, match="not a recorded space"):
        space_from_json({"type": "Graph"})
    with pytest.raises(SpaceRecordError, match="format 2"):
        PolicySpaces.from_json({"format": 2})


def test_a_run_records_the_spaces_its_agent_was_built_with(trained_run):
    from amago_tools.policy import load_run

    run_dir = trained_run("ff")
    recorded = PolicySpaces.from_json(json.loads((run_dir / "spaces.json").read_text()))
    assert recorded.env_action_space == gym.spaces.Discrete(4)
    assert recorded.obs_space == gym.spaces.Dict({"observation": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)})
    assert recorded.rl2_space.shape == (5,)
    assert load_run(run_dir).agent.obs_space == recorded.obs_space
