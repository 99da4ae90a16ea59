"""Seeded runs repeat exactly on the CPU; an unseeded run records the seed it drew, so it can be repeated too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amago import Experiment
from amago_core.config.sources import load_config

TIMING = ("FPS", "Time", "time")


def _run(job: dict[str, Any], folder: Path, **settings: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    job = {**job, "run": {**job["run"], "ckpt_base_dir": str(folder), "torch_threads": 1}}
    job["logging"] = {**job["logging"], "log_interval": 1, "plot": False}
    experiment = Experiment(load_config(base=job, environ={}), **settings)
    experiment.start()
    try:
        experiment.learn()
    finally:
        experiment.close()
    run_dir = folder / job["run"]["name"]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    kept = [{k: v for k, v in row.items() if not any(t in k for t in TIMING)} for row in rows]
    return kept, json.loads((run_dir / "config.resolved.json").read_text())


@pytest.mark.slow
def test_the_same_seed_config_and_threads_give_identical_metrics(tiny_job, tmp_path):
    first, _ = _run(tiny_job, tmp_path / "a", epochs=3)
    second, _ = _run(tiny_job, tmp_path / "b", epochs=3)
    losses = [row["train/Loss"] for row in first if "train/Loss" in row]
    assert len(losses) >= 8, "the job should log several training steps"
    assert first == second  # every loss, return and count, record by record


def test_an_unseeded_run_records_the_seed_it_drew_and_repeats_with_it(tiny_job, tmp_path):
    tiny_job["run"] = {**tiny_job["run"], "seed": None}
    first, config = _run(tiny_job, tmp_path / "a", epochs=2)
    drawn = config["run"]["seed"]
    assert isinstance(drawn, int)
    tiny_job["run"] = {**tiny_job["run"], "seed": drawn}
    again, _ = _run(tiny_job, tmp_path / "b", epochs=2)
    assert first == again


def test_deterministic_kernels_can_be_asked_for(tiny_job, tmp_path):
    import torch

    try:
        first, config = _run(tiny_job, tmp_path / "a", epochs=1, deterministic=True)
        assert torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(False)
    assert config["run"]["deterministic"] is True
    assert any("train/Loss" in row for row in first)
