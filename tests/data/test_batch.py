"""Windows for each padding mode, collation with an explicit mask, terminated vs truncated in stored data."""

from __future__ import annotations

import numpy as np
import pytest

from amago_core.data.batch import LengthGroupedCollate, collate
from amago_core.data.files import load_traj
from amago_core.data.rldata import RLData
from amago_core.data.timestep import Timestep
from amago_core.data.writer import TrajectoryWriter


def example(n: int, action_dim: int = 2) -> RLData:
    """n transitions; row t of every array encodes t so windows can be checked."""
    t = np.arange(n + 1)
    return RLData(
        obs={"x": t[:, None].astype(np.float32), "img": np.full((n + 1, 2, 2), 9, np.uint8)},
        rews=t[:n, None].astype(np.float32) + 0.5,
        dones=np.zeros((n, 1), bool),
        actions=np.tile(t[:n, None], (1, action_dim)).astype(np.float32),
        time_idxs=t[:, None].astype(np.int64),
        rl2s=np.tile(t[:, None], (1, 1 + action_dim)).astype(np.float32),
    )


EXPECTED_START_RANGE = {  # n = 20 transitions, length = 6 (inclusive bounds of the drawn start)
    "none": (0, 14),
    "left": (-5, 14),
    "right": (0, 18),
    "both": (-5, 18),
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["none", "left", "right", "both"])
def test_window_ranges_and_alignment(mode):
    data, length = example(20), 6
    rng = np.random.default_rng(0)
    firsts, short_windows = set(), []
    for _ in range(3000):
        w = data.random_slice(length, mode, rng=rng)
        first, n_obs = int(w.time_idxs[0, 0]), len(w.time_idxs)
        assert 2 <= n_obs <= length + 1
        assert len(w) == n_obs - 1
        # Every field is cut from the same rows: obs t pairs with action t and reward t.
        np.testing.assert_array_equal(w.obs["x"][:, 0], np.arange(first, first + n_obs))
        np.testing.assert_array_equal(w.rl2s[:, 0], w.time_idxs[:, 0])
        np.testing.assert_array_equal(w.actions[:, 0], np.arange(first, first + n_obs - 1))
        np.testing.assert_array_equal(w.rews[:, 0], np.arange(first, first + n_obs - 1) + 0.5)
        firsts.add(first)
        if n_obs < length + 1:
            short_windows.append((first, first + n_obs - 1))
    low, high = EXPECTED_START_RANGE[mode]
    assert min(firsts) == max(low, 0)
    assert max(firsts) == high
    starts_at_0 = {s for s, e in short_windows if s == 0}
    ends_at_20 = {e for s, e in short_windows if e == 20}
    assert all(s == 0 or e == 20 for s, e in short_windows)
    assert bool(starts_at_0) == (mode in ("left", "both"))
    assert bool(ends_at_20) == (mode in ("right", "both"))


def test_right_padding_gives_windows_ending_at_the_file_end():
    data = example(20)
    rng = np.random.default_rng(1)
    ends = [int(data.random_slice(6, "right", rng=rng).time_idxs[-1, 0]) for _ in range(2000)]
    assert np.mean(np.array(ends) == 20) > 0.2  # starts 14..18 all end at 20
    none_ends = [int(data.random_slice(6, "none", rng=rng).time_idxs[-1, 0]) for _ in range(2000)]
    assert np.mean(np.array(none_ends) == 20) < 0.1


def test_short_trajectories_are_returned_whole():
    data = example(3)
    assert data.random_slice(6, "none") is data


def test_bad_padding_mode():
    with pytest.raises(ValueError, match="padded_sampling"):
        example(10).random_slice(3, "middle")  # type: ignore[arg-type]


def test_collate_pads_right_with_an_explicit_mask():
    batch = collate([example(5), example(2), example(3)])
    assert batch.seq_len == 6
    assert batch.obs["img"].shape == (3, 6, 2, 2)
    assert batch.obs["img"].dtype == np.uint8
    assert batch.rl2s.shape == (3, 6, 3)
    assert batch.actions.shape == (3, 5, 2)
    assert batch.dones.dtype == bool
    assert batch.mask.tolist() == [[True] * 6, [True] * 3 + [False] * 3, [True] * 4 + [False] * 2]
    assert batch.transition_mask.tolist() == [[True] * 5, [True] * 2 + [False] * 3, [True] * 3 + [False] * 2]
    # Padding is zero and flagged by the mask only: padded dones never look like terminals.
    assert not batch.dones[~batch.transition_mask].any()
    assert (batch.obs["img"][~batch.mask] == 0).all()
    np.testing.assert_array_equal(batch.rl2s[1, :3, 0], [0, 1, 2])


def test_length_grouping_sorts_pools_into_batches_and_keeps_each_timesteps_weight():
    lengths = [30, 4, 17, 9, 2, 25, 11, 6, 20]
    pool = [example(n) for n in lengths]
    grouped = LengthGroupedCollate(groups=3)(pool)
    assert len(grouped) == 3
    seen = sorted(int(b.transition_mask[i].sum()) for b, _ in grouped for i in range(b.batch_size))
    assert seen == sorted(lengths)  # every example trained on exactly once
    by_length = sorted(grouped, key=lambda bw: bw[0].seq_len)
    assert [sorted(int(n) for n in b.transition_mask.sum(1)) for b, _ in by_length] == [
        [2, 4, 6],
        [9, 11, 17],
        [20, 25, 30],
    ]
    # Padding falls from 3 x 31 observations per row to each group's own longest.
    assert sum(b.seq_len * b.batch_size for b, _ in grouped) < 3 * 3 * 31
    # Weighted per-batch means (what the agents' masked-mean losses give) equal the whole pool's per-timestep
    # mean, times the number of batches: grouping does not re-weight timesteps.
    pool_values = np.concatenate([ex.rews[:, 0] for ex in pool])
    weighted = sum(w * b.rews[..., 0][b.transition_mask].mean() for b, w in grouped)
    np.testing.assert_allclose(weighted, 3 * pool_values.mean(), rtol=1e-6)
    # Same pool, same batches in the same order.
    again = LengthGroupedCollate(groups=3)(pool)
    assert [b.seq_len for b, _ in again] == [b.seq_len for b, _ in grouped]


def test_length_grouping_of_one_is_a_plain_batch():
    pool = [example(5), example(2)]
    ((batch, weight),) = LengthGroupedCollate(groups=1)(pool)
    assert weight == 1.0
    np.testing.assert_array_equal(batch.mask, collate(pool).mask)


def test_collate_refuses_mismatched_keys():
    other = example(2)
    other.obs = {"y": other.obs["x"]}
    with pytest.raises(ValueError, match="observation keys"):
        collate([example(2), other])


def test_to_torch_dtypes():
    torch = pytest.importorskip("torch")
    b = collate([example(4), example(2)]).to_torch()
    assert b.rl2s.dtype == torch.float32
    assert b.time_idxs.dtype == torch.int64
    assert b.dones.dtype == torch.bool
    assert b.mask.dtype == torch.bool
    assert b.obs["img"].dtype == torch.uint8
    assert b.transition_mask.shape == (2, 4)


def test_from_arrays_rebuilds_rl2s():
    d = example(3)
    rebuilt = RLData.from_arrays(d.obs, d.rews, d.dones, d.actions, d.time_idxs)
    np.testing.assert_array_equal(rebuilt.rl2s[0], [0, 0, 0])
    np.testing.assert_array_equal(rebuilt.rl2s[1], [0.5, 0, 0])
    np.testing.assert_array_equal(rebuilt.rl2s[2], [1.5, 1, 1])


def _step(t: int, terminated: bool) -> Timestep:
    return Timestep(
        obs={"x": np.array([[t]], np.float32)},
        prev_action=np.zeros((1, 1), np.float32),
        reward=np.array([1.0], np.float32),
        time_idx=np.array([t]),
        terminal=np.array([terminated]),
    )


@pytest.mark.parametrize(("terminated", "truncated"), [(True, False), (False, True), (True, True)])
def test_terminated_drives_dones_and_either_ends_the_file(tmp_path, terminated, truncated):
    writer = TrajectoryWriter(1, tmp_path)
    writer.start(0, _step(0, False))
    for t in range(1, 4):
        end = t == 3
        writer.add(0, _step(t, terminated and end), done=end and (terminated or truncated), env_name="e")
    (path,) = writer.flush()
    f = load_traj(path)
    assert len(f.time_idxs) == 4  # a truncated episode still ends with its final observation
    assert f.dones[:, 0].tolist() == [False, False, terminated]
    assert collate([RLData.from_frozen(f)]).dones[0, -1, 0] == terminated
