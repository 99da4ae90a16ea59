"""Timestep and Trajectory: policy-input order, reset versions, and the T vs T - 1 alignment of stored arrays."""

from __future__ import annotations

import numpy as np
import pytest

from amago_core.data.timestep import Timestep
from amago_core.data.trajectory import FrozenTraj, Trajectory


def ts(t: int, action: int | None, reward: float, terminal: bool = False, n_actions: int = 3) -> Timestep:
    prev = np.zeros((1, n_actions), np.uint8)
    if action is not None:
        prev[0, action] = 1
    return Timestep(
        obs={"x": np.array([[10 * t]], np.float32), "img": np.full((1, 2, 2), t, np.uint8)},
        prev_action=prev,
        reward=np.array([reward], np.float32),
        time_idx=np.array([t]),
        terminal=np.array([terminal]),
    )


def test_policy_input_puts_reward_before_action():
    t = ts(4, action=2, reward=0.5)
    inp = t.as_input()
    np.testing.assert_array_equal(inp.rl2, [[0.5, 0, 0, 1]])
    assert inp.rl2.dtype == np.float32
    np.testing.assert_array_equal(inp.time_idx, [[4]])
    assert inp.time_idx.dtype == np.int64
    assert inp.obs["img"].dtype == np.uint8


def test_reset_version_zeroes_only_the_given_rows_and_keeps_obs():
    batch = Timestep.concat([ts(3, 1, 2.0, terminal=True), ts(5, 0, 1.0)])
    reset = batch.reset_version([0])
    assert reset.time_idx.tolist() == [0, 5]
    assert reset.reward.tolist() == [0.0, 1.0]
    assert reset.terminal.tolist() == [False, False]
    assert reset.prev_action.tolist() == [[0, 0, 0], [1, 0, 0]]
    np.testing.assert_array_equal(reset.obs["x"], batch.obs["x"])
    assert batch.time_idx.tolist() == [3, 5]  # the original is untouched


def test_split_and_concat_round_trip():
    batch = Timestep.concat([ts(1, 0, 1.0), ts(2, 1, 2.0), ts(3, 2, 3.0)])
    rows = batch.split()
    assert [r.batch_size for r in rows] == [1, 1, 1]
    again = Timestep.concat(rows)
    np.testing.assert_array_equal(again.obs["img"], batch.obs["img"])
    np.testing.assert_array_equal(again.prev_action, batch.prev_action)


def test_mismatched_batch_dims_are_refused():
    with pytest.raises(ValueError, match="batch"):
        Timestep(
            obs={"x": np.zeros((2, 1))},
            prev_action=np.zeros((1, 2)),
            reward=np.zeros(1),
            time_idx=np.zeros(1, np.int64),
            terminal=np.zeros(1, bool),
        )


def test_frozen_arrays_are_aligned():
    # o_0 (reset), then a_0=2 -> r=1, a_1=0 -> r=2, a_2=1 -> r=3 terminal.
    traj = Trajectory([ts(0, None, 0.0), ts(1, 2, 1.0), ts(2, 0, 2.0), ts(3, 1, 3.0, terminal=True)])
    f = traj.freeze()
    assert f.obs["x"][:, 0].tolist() == [0, 10, 20, 30]
    assert f.time_idxs[:, 0].tolist() == [0, 1, 2, 3]
    assert f.rews[:, 0].tolist() == [1.0, 2.0, 3.0]
    assert f.dones[:, 0].tolist() == [False, False, True]
    assert f.actions.argmax(1).tolist() == [2, 0, 1]  # action t leads from obs t to obs t + 1
    assert f.actions.dtype == np.float32
    np.testing.assert_array_equal(f.rl2s[1], [1.0, 0, 0, 1])
    np.testing.assert_array_equal(f.rl2s[0], [0, 0, 0, 0])
    assert len(f) == 3
    assert traj.total_return == f.total_return == 6.0
    f.check()


def test_to_dict_uses_amago_keys_and_round_trips():
    f = Trajectory([ts(0, None, 0.0), ts(1, 1, 1.0)]).freeze()
    d = f.to_dict()
    assert set(d) == {"rl2s", "time_idxs", "rews", "dones", "actions", "_OBS_KEY_x", "_OBS_KEY_img"}
    back = FrozenTraj.from_dict(d)
    np.testing.assert_array_equal(back.obs["img"], f.obs["img"])


def test_check_names_a_misaligned_array():
    f = Trajectory([ts(0, None, 0.0), ts(1, 1, 1.0), ts(2, 1, 1.0)]).freeze()
    f.rews = f.rews[:1]
    with pytest.raises(ValueError, match="rews has 1 rows"):
        f.check()


def test_trajectory_refuses_batched_timesteps():
    with pytest.raises(ValueError, match="split"):
        Trajectory().add_timestep(Timestep.concat([ts(0, None, 0), ts(0, None, 0)]))
