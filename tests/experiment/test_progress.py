"""Progress a researcher can read: plain lines when redirected, train returns logged, a final summary with rates."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from amago_core.experiment.metrics import AVERAGE_RETURN_KEY, train_return_metrics
from amago_core.experiment.progress import EpochReport, RunProgress, duration
from amago_tools.plotting import read_curves, val_metric_keys


@pytest.mark.slow
def test_a_redirected_run_writes_one_plain_line_per_epoch_and_a_full_summary(tiny_job, tmp_path):
    tiny_job["logging"] = {**tiny_job["logging"], "verbose": True}
    config_file = tmp_path / "tiny.json"
    config_file.write_text(json.dumps(tiny_job))
    stderr_file = tmp_path / "stderr.log"
    with stderr_file.open("w") as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "amago_core.cli.app", "run", "-c", str(config_file)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            check=False,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            timeout=300,
        )
    log = stderr_file.read_text()
    assert done.returncode == 0, log
    assert "\r" not in log  # no tqdm frames in a file
    progress = [line for line in log.splitlines() if line.startswith("amago: epoch ")]
    assert [line.split()[2] for line in progress] == ["1/3", "2/3", "3/3"]
    assert all("env steps" in line and "ETA" in line for line in progress)
    assert "/96 |" in progress[-1]  # the target: 3 epochs x 8 steps x 4 actors
    assert "| fps (env steps/s)" in log
    assert "| val return" in log

    summary = json.loads(done.stdout)
    assert summary["wall_seconds"] > 0
    assert summary["env_steps_per_second"] > 0
    assert summary["updates_per_second"] > 0
    assert summary["best_val_epoch"] in (1, 2)  # epoch 0's val is the untrained policy's: never "best"
    assert summary["best_val_return"] is not None
    assert summary["checkpoint"].endswith("policy.safetensors")
    assert os.path.isfile(summary["checkpoint"])

    records = [json.loads(line) for line in (tmp_path / "runs" / "tiny" / "metrics.jsonl").open()]
    train_returns = [r for r in records if "train/episodic_return" in r]
    assert len(train_returns) == 3  # 8 steps of a 4-step episode: episodes finish every epoch
    assert all(r["train/episodes"] >= 1 for r in train_returns)
    assert all("train/episodic_return in TMaze-Passive-H3" in r for r in train_returns)
    curves = read_curves(tmp_path / "runs" / "tiny" / "metrics.jsonl")
    assert curves["train/episodic_return"].xs == [r["total_frames"] for r in train_returns]  # vs env frames
    assert "val/Episodes" not in val_metric_keys(records)  # a fixed val budget: a constant count


def test_progress_line_eta_and_table_from_a_fake_clock():
    now = [100.0]
    out = io.StringIO()
    progress = RunProgress(epochs=10, frames_target=1000, stream=out, bars=False, clock=lambda: now[0])
    now[0] += 20.0  # two epochs of 10 s
    progress.epoch_done(EpochReport(1, 200, 22, {"train/Loss": 0.5}))
    line = out.getvalue().splitlines()[0]
    assert line == "amago: epoch 2/10 | env steps 200/1k | updates 22 | elapsed 00:20 | ETA 01:20"
    assert "| fps" not in out.getvalue()  # no table between validations within a minute
    now[0] += 10.0
    progress.epoch_done(
        EpochReport(
            2,
            300,
            33,
            {f"val/{AVERAGE_RETURN_KEY}": 0.75, "train/episodic_return": 0.5, "train/episodes": 6.0},
        )
    )
    text = out.getvalue()
    assert "| val return" in text
    assert "0.75" in text
    assert "0.5 (6 episodes)" in text
    fps = next(row for row in text.splitlines() if row.startswith("| fps (env steps/s)"))
    assert fps.split("|")[2].strip() == "10"  # 300 steps in 30 s
    table = [row for row in text.splitlines() if row.startswith(("|", "-"))]
    assert 8 <= len(table) <= 12  # a few lines
    assert all(len(row) <= 60 for row in table)


def test_a_resumed_session_counts_its_eta_from_its_own_epochs():
    now = [0.0]
    progress = RunProgress(epochs=10, first_epoch=8, stream=io.StringIO(), bars=False, clock=lambda: now[0])
    now[0] = 30.0
    assert progress.eta(9) == 30.0  # one epoch of 30 s done this session, one left


def test_train_return_metrics_average_per_env_name_first():
    metrics = train_return_metrics([{"a": [1.0, 1.0, 1.0], "b": [0.0]}, {"a": [1.0]}])
    assert metrics["episodic_return"] == 0.5  # the mean of the per-name means
    assert metrics["episodes"] == 5.0
    assert metrics["episodes in a"] == 4.0
    assert train_return_metrics([{"a": []}]) == {}


def test_duration_format():
    assert duration(65) == "01:05"
    assert duration(3725) == "1:02:05"
    assert duration(float("nan")) == "?"


def test_the_best_val_return_is_never_the_untrained_policys(tiny_job, run_job):
    # Validations before the first gradient update (epoch 0's, or every one of a run that never updates) measure
    # the initial weights: reporting one of them as the run's best would credit training with chance.
    from amago_core.experiment.progress import final_numbers

    untrained = run_job(tiny_job, train_batches_per_epoch=0)
    assert untrained.grad_update_counter == 0
    assert final_numbers(untrained)["best_val_return"] is None
    tiny_job["run"] = {**tiny_job["run"], "name": "trained"}
    trained = final_numbers(run_job(tiny_job))
    assert trained["best_val_epoch"] in (1, 2)
