"""DiskTrajDataset: FIFO capacity, protected files, readiness, corrupt files, AMAGO files, cache, workers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from amago_core.data.dataset import DatasetNotReadyError, DoNothingDataset, Relabeler
from amago_core.data.disk_buffer import CorruptTrajFileWarning, DiskTrajDataset
from amago_core.data.files import save_traj
from amago_core.data.mixture import MixtureOfDatasets
from amago_core.data.timestep import Timestep
from amago_core.data.trajectory import Trajectory


def traj(length: int, tag: float = 0.0) -> Trajectory:
    """A trajectory whose observations carry ``tag`` so tests can tell files apart."""
    steps = []
    for t in range(length + 1):
        steps.append(
            Timestep(
                obs={"tag": np.array([[tag]], np.float32)},
                prev_action=np.zeros((1, 1), np.float32) if t == 0 else np.array([[0.5]], np.float32),
                reward=np.array([float(t > 0)], np.float32),
                time_idx=np.array([t]),
                terminal=np.array([t == length]),
            )
        )
    return Trajectory(steps)


def put(folder, tag: float, stamp: float, length: int = 5):
    return save_traj(traj(length, tag), folder, f"env_{int(tag):08d}_{stamp}")


def make_dset(tmp_path, **kwargs) -> DiskTrajDataset:
    kwargs.setdefault("dset_max_size", 3)
    d = DiskTrajDataset(tmp_path, "dset", **kwargs)
    d.configure(items_per_epoch=8, max_seq_len=None)
    return d


def test_layout(tmp_path):
    d = make_dset(tmp_path)
    assert d.fifo_dir == tmp_path / "dset" / "buffer" / "fifo"
    assert d.protected_dir.is_dir()
    assert d.save_new_trajs_to == d.fifo_dir


def test_fifo_keeps_the_newest_and_never_touches_protected(tmp_path):
    d = make_dset(tmp_path)
    for i, stamp in enumerate([50.0, 10.0, 40.0, 20.0, 30.0]):
        put(d.fifo_dir, i, stamp)
    protected = [put(d.protected_dir, 100 + i, float(i)) for i in range(4)]  # older than everything
    metrics = d.on_end_of_collection()
    kept = sorted(float(p.name.rsplit("_", 1)[1][:-4]) for p in d.fifo_files)
    assert kept == [30.0, 40.0, 50.0]
    assert metrics["Trajectory Files Deleted"] == 2
    assert metrics["Total Trajectory Files in Replay Buffer"] == 7
    assert all(p.exists() for p in protected)


def test_without_edit_rights_nothing_is_deleted(tmp_path):
    d = DiskTrajDataset(tmp_path, "dset", dset_max_size=1)
    d.configure(8, None, has_edit_rights=False)
    for i in range(3):
        put(d.fifo_dir, i, float(i))
    assert d.on_end_of_collection() == {}
    assert len(d.fifo_files) == 3


def test_empty_buffer_reports_not_ready(tmp_path):
    d = make_dset(tmp_path, dset_min_size=2)
    assert not d.ready_for_training
    assert "holds 0 trajectory file(s)" in d.not_ready_reason()
    with pytest.raises(DatasetNotReadyError, match="Collect more data"):
        d[0]
    put(d.fifo_dir, 1, 1.0)
    d.refresh()
    assert not d.ready_for_training
    put(d.protected_dir, 2, 2.0)
    d.refresh()
    assert d.ready_for_training
    assert d[0].obs["tag"].shape == (6, 1)
    unconfigured = DiskTrajDataset(tmp_path, "other", dset_max_size=3)
    assert "not configured" in unconfigured.not_ready_reason()
    assert not DoNothingDataset().ready_for_training


def test_corrupt_file_is_skipped_once_and_moved_aside(tmp_path):
    d = make_dset(tmp_path, seed=0)
    put(d.fifo_dir, 1, 1.0)
    bad = d.fifo_dir / "env_deadbeef_2.0.npz"
    bad.write_bytes(b"PK\x03\x04 truncated")
    d.refresh()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tags = {float(d.sample_random_trajectory().obs["tag"][0, 0]) for _ in range(30)}
    assert tags == {1.0}
    relevant = [w for w in caught if issubclass(w.category, CorruptTrajFileWarning)]
    assert len(relevant) == 1
    assert "env_deadbeef_2.0.npz" in str(relevant[0].message)
    assert not bad.exists()
    assert (d.quarantine_dir / bad.name).read_bytes() == b"PK\x03\x04 truncated"  # moved, not deleted
    d.refresh()
    assert bad not in d.all_files


def test_only_corrupt_files_is_not_ready_not_a_crash(tmp_path):
    d = make_dset(tmp_path)
    (d.fifo_dir / "env_deadbeef_2.0.npz").write_bytes(b"")
    d.refresh()
    with pytest.warns(CorruptTrajFileWarning), pytest.raises(DatasetNotReadyError, match="no readable"):
        d.sample_random_trajectory()


def test_a_file_deleted_after_listing_is_skipped_silently(tmp_path):
    d = make_dset(tmp_path)
    gone = put(d.fifo_dir, 1, 1.0)
    put(d.fifo_dir, 2, 2.0)
    d.refresh()
    gone.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all(d.sample_random_trajectory().obs["tag"][0, 0] == 2.0 for _ in range(10))


def test_amago_layout_npz_loads(tmp_path):
    """A file as AMAGO writes it (np.savez of FrozenTraj.to_dict()), built by hand here."""
    d = make_dset(tmp_path)
    t = 4
    np.savez(
        d.protected_dir / "metafrozenlake_1a2b3c4d_1700000000.123.npz",
        _OBS_KEY_observation=np.arange(t * 3, dtype=np.float32).reshape(t, 3),
        rl2s=np.concatenate([np.zeros((1, 5)), np.ones((t - 1, 5))]).astype(np.float32),
        time_idxs=np.arange(t, dtype=np.int64)[:, None],
        rews=np.ones((t - 1, 1), np.float32),
        dones=np.array([[False], [False], [True]]),
        actions=np.eye(4, dtype=np.float32)[[0, 1, 2]],
    )
    d.refresh()
    data = d.sample_random_trajectory()
    assert data.obs["observation"].shape == (4, 3)
    assert data.actions.shape == (3, 4)
    assert data.dones[:, 0].tolist() == [False, False, True]


def test_cache_never_hides_new_or_replaced_files(tmp_path):
    d = make_dset(tmp_path, cache_size=8, seed=0)
    put(d.fifo_dir, 1, 1.0)
    d.refresh()
    assert d.sample_random_trajectory().obs["tag"][0, 0] == 1.0
    put(d.fifo_dir, 2, 2.0)
    d.refresh()
    assert {float(d.sample_random_trajectory().obs["tag"][0, 0]) for _ in range(40)} == {1.0, 2.0}
    # Same name, new content (e.g. relabeled offline): the cache must notice.
    (path,) = [p for p in d.fifo_files if "00000001" in p.name]
    save_traj(traj(9, 7.0), d.fifo_dir, path.stem)
    lengths = {len(d.sample_random_trajectory()) for _ in range(40)}
    assert 9 in lengths
    assert 5 in lengths


def test_relabeler_runs_on_the_whole_file_before_slicing(tmp_path):
    class Double(Relabeler):
        def relabel(self, t):
            assert len(t) == 20
            t.rews = t.rews * 2
            return t

    d = DiskTrajDataset(tmp_path, "dset", dset_max_size=3, relabeler=Double())
    d.configure(8, max_seq_len=4)
    save_traj(traj(20), d.fifo_dir, "env_00000001_1.0")
    d.refresh()
    window = d[0]
    assert len(window) == 4
    assert set(window.rews[:, 0].tolist()) == {2.0}


def test_seeded_sampling_is_reproducible_and_workers_differ(tmp_path):
    torch = pytest.importorskip("torch")
    from amago_core.data.batch import collate

    def tags(num_workers: int, seed: int) -> list[float]:
        d = make_dset(tmp_path, dset_max_size=100, seed=seed)
        d.configure(items_per_epoch=16, max_seq_len=None)
        d.sample_random_trajectory()  # the parent's generator now exists; forked workers must not reuse it
        torch.manual_seed(0)
        extra = {"multiprocessing_context": "fork"} if num_workers else {}
        loader = torch.utils.data.DataLoader(
            d, batch_size=4, num_workers=num_workers, collate_fn=collate, **extra
        )
        return [float(x) for b in loader for x in b.obs["tag"][:, 0, 0]]

    for i in range(50):
        put(make_dset(tmp_path, dset_max_size=100).fifo_dir, i, float(i))
    two = tags(2, seed=1)
    # Workers 0 and 1 each produce two batches (interleaved); identical streams would repeat batches.
    batches = [tuple(two[i : i + 4]) for i in range(0, 16, 4)]
    assert len(set(batches)) == 4
    assert tags(2, seed=1) == two
    assert tags(0, seed=1) == tags(0, seed=1)


class OfflineDataset(DiskTrajDataset):
    """A disk dataset that takes no new trajectories (an offline set)."""

    @property
    def save_new_trajs_to(self):
        return None


def test_mixture_weights_and_readiness(tmp_path):
    online = DiskTrajDataset(tmp_path, "online", dset_max_size=10, seed=0)
    offline = OfflineDataset(tmp_path, "offline", dset_max_size=10, seed=0)
    mix = MixtureOfDatasets([online, offline], [0.5, 0.5], seed=0)
    put(offline.protected_dir, 9, 1.0)
    offline.refresh()
    mix.configure(8, None)
    assert mix.ready_for_training
    assert mix.save_new_trajs_to == online.fifo_dir
    assert all(mix.sample_random_trajectory().obs["tag"][0, 0] == 9 for _ in range(10))
    put(online.fifo_dir, 1, 1.0)
    metrics = mix.on_end_of_collection()
    assert metrics["online Normalized Sample Weight"] == 0.5
    assert "offline Trajectory Files Saved in Protected Replay Buffer" in metrics
    seen = {float(mix.sample_random_trajectory().obs["tag"][0, 0]) for _ in range(40)}
    assert seen == {1.0, 9.0}
    with pytest.raises(ValueError, match="at most one dataset"):
        MixtureOfDatasets([online, DiskTrajDataset(tmp_path, "other", dset_max_size=1)], [0.5, 0.5])


def test_mixture_smooths_a_late_start(tmp_path):
    online = DiskTrajDataset(tmp_path, "online", dset_max_size=10)
    offline = OfflineDataset(tmp_path, "offline", dset_max_size=10)
    put(offline.protected_dir, 1, 1.0)
    offline.refresh()
    mix = MixtureOfDatasets(
        [online, offline], [0.8, 0.2], initial_sampling_weights=[0.2, 0.2], smooth_sudden_starts=3
    )
    mix.configure(8, None)
    weights = [mix.on_end_of_collection()["online Current Sample Weight"]]  # epoch 0: online still empty
    put(online.fifo_dir, 2, 2.0)
    for _ in range(5):
        weights.append(mix.on_end_of_collection()["online Current Sample Weight"])
    np.testing.assert_allclose(weights, [0.0, 0.4, 0.6, 0.8, 0.8, 0.8])


def test_a_child_that_joins_late_ramps_up_from_zero_by_default(tmp_path):
    online = DiskTrajDataset(tmp_path, "online", dset_max_size=10)
    offline = OfflineDataset(tmp_path, "offline", dset_max_size=10)
    put(offline.protected_dir, 1, 1.0)
    offline.refresh()
    mix = MixtureOfDatasets([online, offline], [0.8, 0.2], smooth_sudden_starts=4)
    mix.configure(
        8, None
    )  # offline is ready now, online is not: AMAGO ramps online from 0, offline not at all
    first = mix.on_end_of_collection()
    assert (first["online Current Sample Weight"], first["offline Current Sample Weight"]) == (0.0, 0.2)
    put(online.fifo_dir, 2, 2.0)
    weights = [mix.on_end_of_collection()["online Current Sample Weight"] for _ in range(5)]
    np.testing.assert_allclose(weights, [0.2, 0.4, 0.6, 0.8, 0.8])


def test_a_mixture_and_its_children_draw_from_one_saved_stream(tmp_path):
    # The training state saves the dataset's generator; the children's draws must come from it too, or a
    # resumed run would pick other windows than the uninterrupted one.
    online = DiskTrajDataset(tmp_path, "online", dset_max_size=10, seed=1)
    offline = OfflineDataset(tmp_path, "offline", dset_max_size=10, seed=2)
    for i in range(4):
        put(online.fifo_dir, 10 + i, float(i), length=12)
        put(offline.protected_dir, 20 + i, float(i), length=12)
    online.refresh()
    offline.refresh()
    mix = MixtureOfDatasets([online, offline], [0.5, 0.5], seed=0)
    mix.configure(8, max_seq_len=4)
    saved = mix.rng.bit_generator.state

    def windows() -> list[tuple[float, float]]:
        out = []
        for _ in range(12):
            data = mix.sample_random_trajectory()
            out.append((float(data.obs["tag"][0, 0]), float(data.time_idxs[0, 0])))
        return out

    first = windows()
    mix.rng.bit_generator.state = saved  # what a resume restores
    online.seed = offline.seed = 99  # the children's own seeds play no part
    online._rng = offline._rng = None
    assert windows() == first


def test_each_data_parallel_process_samples_its_own_stream(tmp_path):
    def build(process: int) -> MixtureOfDatasets:
        a = DiskTrajDataset(dset_root=tmp_path, dset_name="a", dset_max_size=10, seed=5)
        b = DoNothingDataset(dset_name="b", seed=6)  # a mixture takes new files into one member only
        mixture = MixtureOfDatasets([a, b], sampling_weights=[0.5, 0.5], seed=7)
        mixture.seed_for_process(process)
        mixture.seed_for_process(process)  # again (a restart of setup): the same stream, not a new one
        return mixture

    main, other = build(0), build(1)
    assert [main.seed, *(d.seed for d in main.datasets)] == [7, 5, 6]  # one process samples as before
    assert all(s not in (5, 6, 7) for s in [other.seed, *(d.seed for d in other.datasets)])
    assert build(1).seed == other.seed
    draws = [[int(m.rng.integers(1 << 30)) for _ in range(4)] for m in (main, other)]
    assert draws[0] != draws[1]
    unseeded = DiskTrajDataset(dset_root=tmp_path, dset_name="c", dset_max_size=10)
    unseeded.seed_for_process(3)
    assert unseeded.seed is None


def test_a_mixture_refresh_lists_new_files_without_moving_the_ramp(tmp_path):
    online = DiskTrajDataset(tmp_path, "online", dset_max_size=10)
    offline = OfflineDataset(tmp_path, "offline", dset_max_size=10)
    put(offline.protected_dir, 1, 1.0)
    offline.refresh()
    mix = MixtureOfDatasets([online, offline], [0.8, 0.2], smooth_sudden_starts=4)
    mix.configure(8, None)
    put(online.fifo_dir, 2, 2.0)
    for _ in range(5):  # a learner polling for data every few seconds
        mix.refresh()
    assert online.fifo_files  # the new file is seen
    assert mix.epoch == 0
    assert mix.current_weights[0] == pytest.approx(0.2)  # the first step of its ramp, not the fifth
