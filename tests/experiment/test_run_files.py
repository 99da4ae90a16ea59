"""Run folders: atomic writes, checkpoint discovery, metrics names, plots."""

from __future__ import annotations

import json
import os

import pytest

from amago_core.experiment.metrics import AVERAGE_RETURN_KEY, policy_metrics
from amago_core.experiment.run_dir import (
    PROGRESS_FILE,
    RunPaths,
    atomic_write,
    atomic_write_json,
    replace_dir,
)
from amago_core.hooks.jsonl_logger import read_metrics
from amago_tools.plotting import plot_run


def test_atomic_write_leaves_the_old_file_when_the_writer_crashes(tmp_path):
    target = tmp_path / "config.resolved.json"
    atomic_write_json(target, {"v": 1})

    def crash(tmp):
        tmp.write_text('{"v": 2, "half')
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, crash)
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["config.resolved.json"]  # no temp file left behind


def test_replace_dir_swaps_in_a_complete_folder_or_keeps_the_old(tmp_path):
    target = tmp_path / "state"

    def fill(version):
        def write(tmp):
            (tmp / "model.safetensors").write_text(version)
            (tmp / PROGRESS_FILE).write_text("{}")

        return write

    replace_dir(target, fill("one"))
    assert (target / "model.safetensors").read_text() == "one"

    def crash(tmp):
        (tmp / "model.safetensors").write_text("partial")
        raise RuntimeError("killed mid-save")

    with pytest.raises(RuntimeError):
        replace_dir(target, crash)
    assert (target / "model.safetensors").read_text() == "one"
    replace_dir(target, fill("two"))
    assert (target / "model.safetensors").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]


def test_only_complete_training_states_count_as_saved(tmp_path):
    paths = RunPaths(tmp_path, "run")
    for epoch, complete in ((0, True), (5, True), (10, False)):
        folder = paths.training_state(epoch)
        folder.mkdir(parents=True)
        if complete:
            (folder / PROGRESS_FILE).write_text("{}")
    (paths.training_states / "other_epoch_7").mkdir()
    assert paths.saved_epochs() == [0, 5]


def test_policy_metrics_use_amagos_names_and_mean_of_means():
    stats = {
        "return_history": {"EasyTask": [1.0, 1.0, 1.0, 1.0], "HardTask": [0.0, 0.0, 0.0, 0.0, 10.0]},
        "metric_history": {"EasyTask": {"Episode 0 Success": [1.0, 0.0]}},
    }
    metrics = policy_metrics(stats)
    assert metrics["Average Total Return in EasyTask"] == 1.0
    assert metrics["Average Total Return in HardTask"] == 2.0
    assert metrics["Bottom Quintile Total Return in HardTask"] == 0.0
    assert metrics["Average Episode 0 Success in EasyTask"] == 0.5
    assert metrics[AVERAGE_RETURN_KEY] == 1.5  # mean over names, not over the 9 episodes (which is 14/9)


def test_plot_run_draws_curves_and_survives_a_torn_last_line(tmp_path):
    lines = []
    for i in range(5):
        lines.append(
            json.dumps(
                {
                    "step": i,
                    "total_frames": 100 * i,
                    "gradient_steps": 10 * i,
                    f"val/{AVERAGE_RETURN_KEY}": i / 4,
                    "val/Average Total Return in TMaze": i / 4,
                    "val/Average Episode 0 Success in TMaze": i / 5,
                    "train/Loss": 1.0 / (i + 1),
                }
            )
        )
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + '\n{"step": 5, "val/Av')
    assert len(read_metrics(tmp_path / "metrics.jsonl")) == 5
    written = plot_run(tmp_path)
    assert {p.name for p in written} == {"returns.png", "val_metrics.png", "training.png"}
    assert all(p.stat().st_size > 1000 for p in written)


def test_plot_run_names_a_folder_that_is_not_a_run(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no metrics\.jsonl"):
        plot_run(tmp_path)


def test_progress_file_is_written_last_by_convention(tmp_path):
    # replace_dir + write_progress: a folder without progress.json is never taken for a checkpoint.
    from amago_core.experiment.checkpoints import read_progress, write_progress

    folder = tmp_path / "state"
    folder.mkdir()
    with pytest.raises(FileNotFoundError, match="not a complete amago training state"):
        read_progress(folder)
    write_progress(folder, {"epoch": 3})
    assert read_progress(folder) == {"epoch": 3}
    assert not [p for p in os.listdir(folder) if p.endswith(".tmp")]
