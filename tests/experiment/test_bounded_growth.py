"""What grows in a long run stays bounded, or is read without loading it whole (issue 18, item 3).

- the buffer's quarantine keeps only the newest unreadable files;
- plots read a long metrics.jsonl streamed, drawing a few thousand of its records per curve;
- a resume moves redone records out of a long metrics.jsonl without holding the file in memory.
"""

from __future__ import annotations

import json
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import pytest

from amago_core.data.dataset import DatasetNotReadyError
from amago_core.data.disk_buffer import CorruptTrajFileWarning, DiskTrajDataset
from amago_core.hooks.jsonl_logger import JsonlLogBackend, field_text, read_metrics, record_epoch
from amago_tools.plotting import MAX_POINTS, curves_from_records, plot_run, read_curves

# --- quarantine -----------------------------------------------------------------------------------------------


def _quarantine_one(dataset: DiskTrajDataset, name: str) -> None:
    (dataset.fifo_dir / name).write_bytes(b"PK\x03\x04 cut short")
    dataset.refresh()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CorruptTrajFileWarning)
        with pytest.raises(DatasetNotReadyError):
            dataset.sample_random_trajectory()


def test_the_quarantine_keeps_only_the_newest_files(tmp_path):
    dataset = DiskTrajDataset(tmp_path, "dset", dset_max_size=10, quarantine_max_files=3)
    dataset.configure(items_per_epoch=8, max_seq_len=None)
    # Names sort the other way round from their arrival, so keeping the newest cannot be keeping the last names.
    names = [f"env_{9 - i:08x}_{100 - i}.0.npz" for i in range(7)]
    for name in names:
        _quarantine_one(dataset, name)
    assert sorted(p.name for p in dataset.quarantine_dir.iterdir()) == sorted(names[-3:])
    assert [p.name for p in dataset.quarantined_files()] == names[-3:]  # oldest arrival first
    assert not any(dataset.fifo_dir.iterdir())


def test_the_warning_says_the_quarantine_is_bounded(tmp_path):
    dataset = DiskTrajDataset(tmp_path, "dset", dset_max_size=10, quarantine_max_files=2)
    dataset.configure(items_per_epoch=8, max_seq_len=None)
    (dataset.fifo_dir / "env_deadbeef_2.0.npz").write_bytes(b"")
    dataset.refresh()
    bounded = pytest.warns(CorruptTrajFileWarning, match="keeps the newest 2 files")
    with bounded, pytest.raises(DatasetNotReadyError):
        dataset.sample_random_trajectory()


def test_a_quarantine_of_zero_files_deletes_them(tmp_path):
    dataset = DiskTrajDataset(tmp_path, "dset", dset_max_size=10, quarantine_max_files=0)
    dataset.configure(items_per_epoch=8, max_seq_len=None)
    (dataset.fifo_dir / "env_deadbeef_2.0.npz").write_bytes(b"")
    dataset.refresh()
    with pytest.warns(CorruptTrajFileWarning, match="deleted"), pytest.raises(DatasetNotReadyError):
        dataset.sample_random_trajectory()
    assert dataset.quarantined_files() == []
    assert not any(dataset.fifo_dir.iterdir())


def test_a_negative_quarantine_size_is_refused(tmp_path):
    with pytest.raises(ValueError, match="quarantine_max_files"):
        DiskTrajDataset(tmp_path, "dset", dset_max_size=10, quarantine_max_files=-1)


# --- a long metrics.jsonl -------------------------------------------------------------------------------------

TRAIN_FILLER = 60
"""Metrics in a synthetic train record besides the losses (the default agent logs about 70)."""


def _val(epoch: int) -> dict[str, Any]:
    return {
        "val/Average Total Return (Across All Env Names)": epoch / 1000,
        "val/Average Total Return in TMaze": epoch / 1000,
        "val/Episodes": float(24 + epoch % 2),  # varies: val_metrics.png leaves a constant count out
        "total_frames": 100 * epoch,
        "Epoch": epoch,
        "gradient_steps": 10 * epoch,
    }


def _dataset(epoch: int) -> dict[str, Any]:
    return {
        "dataset/Total Trajectory Files in Replay Buffer": 12 * epoch,
        "total_frames": 100 * epoch,
        "Epoch": epoch,
        "gradient_steps": 10 * epoch,
    }


def _train(epoch: int) -> dict[str, Any]:
    record: dict[str, Any] = {
        "train/Loss": 1.0 / (epoch + 1),
        "train/Critic Loss": 2.0,
        "train/Actor Loss": -1.0,
    }
    record.update({f"train/Filler Metric Number {i}": i * 0.123456789 for i in range(TRAIN_FILLER)})
    return {**record, "total_frames": 100 * epoch, "Epoch": epoch, "gradient_steps": 10 * epoch}


def _write_run(path: Path, epochs: int, *, train_every: int = 1) -> Path:
    """A metrics.jsonl as the logger writes it: per epoch a val, a dataset and (every few) a train record."""
    backend = JsonlLogBackend(path)
    step = 0
    for epoch in range(epochs):
        for record in (_val(epoch), _dataset(epoch), *([_train(epoch)] if epoch % train_every == 0 else [])):
            step += 1
            backend.log(record, step=step)
    backend.close()
    return path


def test_long_curves_are_a_bounded_sample_of_real_records_ending_at_the_newest(tmp_path):
    path = _write_run(tmp_path / "metrics.jsonl", 5_000)
    curves = read_curves(path, max_points=100)
    returns = curves["val/Average Total Return in TMaze"]
    assert 100 <= len(returns.xs) <= 201
    assert returns.xs == sorted(returns.xs)
    assert returns.xs[0] == 0
    assert returns.xs[-1] == 100 * 4_999
    assert all(y == x / 100_000 for x, y in zip(returns.xs, returns.ys, strict=True))  # records, not blends
    loss = curves["train/Loss"]
    assert 100 <= len(loss.xs) <= 201
    assert all(
        y == 1.0 / (x / 10 + 1) for x, y in zip(loss.xs, loss.ys, strict=True)
    )  # against gradient steps
    assert not any(key.startswith("dataset/") or "Filler" in key for key in curves)


def test_a_short_file_reads_as_every_record(tmp_path):
    records = [
        {"step": 1, "val/A": 1.0, "total_frames": 10, "train/Loss": 0.5, "gradient_steps": 3},
        {"step": 2, "val/A": "nan", "val/B": True, "total_frames": 20},
        {"step": 3, "train/Loss": 0.25, "train/Actor Loss": "inf", "gradient_steps": 6},
        {"step": 4, "train/Loss": 0.125},  # no gradient steps: its place in the curve
        {"step": 5, "test/A": 2.0, "total_frames": 30, "nested": {"train/Loss": 9.0}},
        {"step": 6, "train/Critic Loss": 1.5, "gradient_steps": 9, "train/Loss": 0.75},
    ]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"step": 7, "train/Loss": 0.1, "gradi')
    expected = {
        k: v
        for k, v in curves_from_records(read_metrics(path)).items()
        if k in ("val/A", "test/A") or k in {"train/Loss", "train/Critic Loss", "train/Actor Loss"}
    }
    got = read_curves(path)
    assert {k: (c.xs, c.ys) for k, c in got.items()} == {k: (c.xs, c.ys) for k, c in expected.items()}
    assert got["train/Loss"].xs == [3, 6, 2, 9]
    assert got["train/Loss"].ys == [0.5, 0.25, 0.125, 0.75]


def test_a_train_line_glued_onto_a_torn_line_is_skipped_as_json_would(tmp_path):
    path = tmp_path / "metrics.jsonl"
    torn = '{"step": 1, "train/Lo'
    whole = json.dumps({"step": 2, "train/Loss": 0.5, "gradient_steps": 4})
    path.write_text(
        torn + whole + "\n" + json.dumps({"step": 3, "train/Loss": 0.25, "gradient_steps": 8}) + "\n"
    )
    assert read_curves(path)["train/Loss"].ys == [0.25]


def test_plot_run_draws_a_long_run_from_a_bounded_number_of_points(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    epochs = 3 * MAX_POINTS
    _write_run(tmp_path / "metrics.jsonl", epochs, train_every=1)
    drawn: list[int] = []
    plot = Axes.plot

    def counting_plot(self: Axes, *args: Any, **kwargs: Any) -> Any:
        drawn.append(len(args[0]))
        return plot(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", counting_plot)
    written = plot_run(tmp_path)
    assert {p.name for p in written} == {"returns.png", "val_metrics.png", "training.png"}
    assert len(drawn) == 2 + 1 + 3  # two return curves, one val panel, three losses
    assert all(MAX_POINTS <= n <= 2 * MAX_POINTS + 1 for n in drawn), drawn


def test_reading_curves_holds_a_small_part_of_a_long_file(tmp_path):
    path = _write_run(tmp_path / "metrics.jsonl", 8_000)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        read_curves(path, max_points=200)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size > 20_000_000
    assert peak < size / 10, f"peak {peak} B while reading a {size} B file"


# --- rolling back a long metrics.jsonl at resume ----------------------------------------------------------------


def _epochs(path: Path) -> list[int]:
    return [json.loads(line)["Epoch"] for line in path.read_text().splitlines()]


def test_rollback_cuts_the_redone_tail_without_loading_the_file(tmp_path):
    path = _write_run(tmp_path / "metrics.jsonl", 8_000)
    with path.open("a") as handle:
        handle.write('{"step": 999999, "val/Av')  # cut short by the kill
    backend = JsonlLogBackend(path)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        backend.rollback(after_epoch=7_990)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    backend.log({"val/x": 1.0, "Epoch": 7_991}, step=1)
    backend.close()
    assert peak < size / 10, f"peak {peak} B while rolling back a {size} B file"
    kept = _epochs(path)
    assert max(kept[:-1]) == 7_990
    assert kept[-1] == 7_991
    rolled_back = path.with_name("metrics.rolled-back.jsonl").read_text().splitlines()
    assert len(rolled_back) == 9 * 3 + 1
    assert rolled_back[-1] == '{"step": 999999, "val/Av'
    assert all(json.loads(line)["Epoch"] > 7_990 for line in rolled_back[:-1])


def test_rollback_moves_redone_records_that_a_kept_one_follows(tmp_path):
    path = _write_run(tmp_path / "metrics.jsonl", 10)
    backend = JsonlLogBackend(path)
    backend.log(
        {"test/Average Total Return": 1.0, "Epoch": 2}, step=99
    )  # `amago eval` of epoch 2, afterwards
    backend.rollback(after_epoch=5)
    backend.close()
    assert _epochs(path) == [e for e in range(6) for _ in range(3)] + [2]
    assert sorted(set(_epochs(path.with_name("metrics.rolled-back.jsonl")))) == [6, 7, 8, 9]


def test_rollback_with_nothing_redone_leaves_the_file_as_it_was(tmp_path):
    path = _write_run(tmp_path / "metrics.jsonl", 10)
    before = path.read_bytes()
    backend = JsonlLogBackend(path)
    backend.rollback(after_epoch=9)
    backend.close()
    assert path.read_bytes() == before
    assert not path.with_name("metrics.rolled-back.jsonl").exists()


@pytest.mark.parametrize(
    ("line", "epoch"),
    [
        (b'{"step": 1, "Epoch": 4, "x": 1}\n', 4),
        (b'{"step": 1, "x": 1, "Epoch": 12}\n', 12),
        (b'{"step": 1, "x\\"Epoch": 7, "Epoch": 3}\n', 3),  # a key ending in an escaped quote and Epoch
        (b'{"step": 1, "Epoch": 3, "a\\"Epoch": 7}\n', 3),
        (b'{"step": 1, "Epoch": 4.0}\n', None),
        (b'{"step": 1, "Epoch": "4"}\n', None),
        (b'{"step": 1, "x": 1}\n', None),
        (b'{"step": 1, "Epoch": 4}', None),  # no newline: cut short, a later append would glue onto it
        (b'{"step": 1, "Epoch": 4, "val/Av{"step": 2, "Epoch": 9}\n', None),
        (b'{"step": 1, "nested": {"Epoch": 8}, "Epoch": 5}\n', 5),
        (b"\n", None),
    ],
)
def test_record_epoch_reads_like_json(line, epoch):
    assert record_epoch(line) == epoch
    assert field_text(b'{"a": 1, "b": "x, y", "c": -2.5e-3}\n', "c") == b"-2.5e-3"
