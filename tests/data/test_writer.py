"""TrajectoryWriter and trajectory files: snippets, staggering, formats, names, atomic writes."""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from amago_core.data import files
from amago_core.data.files import (
    TrajFileError,
    atomic_write,
    is_traj_file,
    load_traj,
    parse_traj_file_name,
    save_traj,
    traj_file_stem,
)
from amago_core.data.timestep import Timestep
from amago_core.data.trajectory import Trajectory
from amago_core.data.writer import TrajectoryWriter


def step(t: int, terminal: bool = False, width: int = 2) -> Timestep:
    prev = np.zeros((1, 2), np.float32) if t == 0 else np.array([[t % 2, 1 - t % 2]], np.float32)
    return Timestep(
        obs={"x": np.full((1, width), t, np.float32)},
        prev_action=prev,
        reward=np.array([0.0 if t == 0 else float(t)], np.float32),
        time_idx=np.array([t]),
        terminal=np.array([terminal]),
    )


def run_episode(writer: TrajectoryWriter, length: int, name: str = "toy_env") -> None:
    writer.start(0, step(0))
    for t in range(1, length + 1):
        writer.add(0, step(t, terminal=t == length), done=t == length, env_name=name)


def test_snippets_share_their_boundary_step(tmp_path):
    writer = TrajectoryWriter(1, tmp_path, traj_save_len=4)
    run_episode(writer, 10)
    paths = writer.flush()
    trajs = sorted((load_traj(p) for p in paths), key=lambda f: f.time_idxs[0, 0])
    assert [f.time_idxs[:, 0].tolist() for f in trajs] == [[0, 1, 2, 3, 4], [4, 5, 6, 7, 8], [8, 9, 10]]
    for a, b in itertools.pairwise(trajs):
        np.testing.assert_array_equal(a.obs["x"][-1], b.obs["x"][0])
        np.testing.assert_array_equal(a.rl2s[-1], b.rl2s[0])  # the real previous action/reward, not zeros
    assert trajs[1].rl2s[0, 0] == 4.0
    assert [f.dones[-1, 0] for f in trajs] == [False, False, True]
    # Every transition is stored exactly once.
    assert sum(len(f) for f in trajs) == 10
    assert np.concatenate([f.rews[:, 0] for f in trajs]).tolist() == list(range(1, 11))


def test_snippet_lengths_are_staggered_within_bounds(tmp_path):
    writer = TrajectoryWriter(1, tmp_path, traj_save_len=10, stagger=3, seed=0)
    run_episode(writer, 400)
    trajs = [load_traj(p) for p in writer.flush()]
    lengths = sorted(len(f) for f in trajs if not f.dones[-1, 0])  # the episode's last file is cut by its end
    assert min(lengths) >= 7
    assert max(lengths) <= 13
    assert len(set(lengths)) >= 5


def test_whole_episodes_without_save_len_and_nothing_recorded_without_a_folder(tmp_path):
    writer = TrajectoryWriter(1, tmp_path)
    run_episode(writer, 50)
    run_episode(writer, 3)
    assert sorted(len(load_traj(p)) for p in writer.flush()) == [3, 50]
    silent = TrajectoryWriter(1, None)
    run_episode(silent, 5)
    assert silent.flush() == []


@pytest.mark.parametrize("save_as", ["npz", "npz-compressed", "traj"])
def test_formats_round_trip(tmp_path, save_as):
    writer = TrajectoryWriter(1, tmp_path, save_as=save_as)
    run_episode(writer, 6)
    (path,) = writer.flush()
    assert path.suffix == (".traj" if save_as == "traj" else ".npz")
    loaded = load_traj(
        path, allow_pickle=save_as == "traj"
    )  # a .traj file is a pickle: read only when trusted
    expected = Trajectory([step(t, terminal=t == 6) for t in range(7)]).freeze()
    for key in ("rl2s", "time_idxs", "rews", "dones", "actions"):
        np.testing.assert_array_equal(getattr(loaded, key), getattr(expected, key))
        assert getattr(loaded, key).dtype == getattr(expected, key).dtype
    np.testing.assert_array_equal(loaded.obs["x"], expected.obs["x"])


def test_compressed_files_are_smaller(tmp_path):
    sizes = {}
    for save_as in ("npz", "npz-compressed"):
        folder = tmp_path / save_as
        folder.mkdir()
        writer = TrajectoryWriter(1, folder, save_as=save_as)
        writer.start(0, step(0, width=500))
        for t in range(1, 30):
            writer.add(0, step(t, width=500), done=t == 29, env_name="e")
        (path,) = writer.flush()
        sizes[save_as] = path.stat().st_size
    assert sizes["npz-compressed"] < sizes["npz"] / 5


def test_file_names_follow_amago_pattern(tmp_path):
    writer = TrajectoryWriter(1, tmp_path)
    before = time.time()
    run_episode(writer, 2, name="meta_frozen_lake/v1")
    (path,) = writer.flush()
    env, rid, stamp = parse_traj_file_name(path.name)
    assert env == "metafrozenlakev1"
    assert len(rid) == 8
    assert before <= stamp <= time.time()
    assert parse_traj_file_name("not_a_valid_name_here.npz") is None
    assert parse_traj_file_name(traj_file_stem("a_b") + ".traj")[0] == "ab"


def test_a_crash_during_a_write_leaves_no_file(tmp_path, monkeypatch):
    def crashing_savez(f, **arrays):
        f.write(b"PK\x03\x04 half a zip")
        msg = "disk full"
        raise OSError(msg)

    monkeypatch.setattr(np, "savez", crashing_savez)
    traj = Trajectory([step(0), step(1, terminal=True)])
    with pytest.raises(OSError, match="disk full"):
        save_traj(traj, tmp_path, "env_abcd1234_1.0", "npz")
    assert list(tmp_path.iterdir()) == []


def _write_then_die(folder: str) -> None:
    def half(f):
        f.write(b"PK\x03\x04 partial")
        f.flush()
        os._exit(1)  # a killed process: no cleanup, no exception handlers

    atomic_write(Path(folder) / "env_abcd1234_1.0.npz", half)


def test_a_killed_writer_leaves_only_a_hidden_temp_file(tmp_path):
    proc = mp.get_context("fork").Process(target=_write_then_die, args=(str(tmp_path),))
    proc.start()
    proc.join(10)
    left = list(tmp_path.iterdir())
    assert len(left) == 1
    assert left[0].name.startswith(".")
    assert not is_traj_file(left[0])


def _writer_process(folder: str, n: int, reader_started: Any) -> None:
    reader_started.wait(
        30
    )  # write while the reader looks: a writer done before its first look proves nothing
    writer = TrajectoryWriter(1, Path(folder))
    for _ in range(n):
        writer.start(0, step(0, width=4000))
        for t in range(1, 20):
            writer.add(0, step(t, width=4000), done=t == 19, env_name="conc")
        writer.flush()


def test_a_reader_never_sees_a_partial_file(tmp_path):
    context = mp.get_context("fork")
    reader_started = context.Event()
    proc = context.Process(target=_writer_process, args=(str(tmp_path), 60, reader_started))
    proc.start()
    read, looks_while_writing = 0, 0
    try:
        while True:
            writing = proc.is_alive()
            for path in sorted(tmp_path.iterdir()):
                if not is_traj_file(path):
                    continue
                traj = load_traj(path)  # raises TrajFileError on a partial file
                assert len(traj) == 19
                read += 1
            looks_while_writing += writing
            reader_started.set()
            if not writing:
                break
    finally:
        proc.join(30)
    assert proc.exitcode == 0
    assert read >= 60  # the last look, after the writer ended, reads all 60
    assert looks_while_writing >= 2  # and at least one look saw the folder while files were being written


def test_corrupt_and_misaligned_files_raise_traj_file_error(tmp_path):
    bad = tmp_path / "x_12345678_1.0.npz"
    bad.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(TrajFileError, match=r"x_12345678_1\.0\.npz"):
        load_traj(bad)
    good = save_traj(Trajectory([step(0), step(1), step(2)]), tmp_path, "y_12345678_2.0")
    data = dict(np.load(good))
    data["actions"] = data["actions"][:1]
    np.savez(tmp_path / "z_12345678_3.0.npz", **data)
    with pytest.raises(TrajFileError, match="misaligned"):
        load_traj(tmp_path / "z_12345678_3.0.npz")
    with pytest.raises(FileNotFoundError):
        load_traj(tmp_path / "gone_12345678_4.0.npz")
    assert files.SAVE_FORMATS == ("npz", "npz-compressed", "traj")
