"""Shared settings for experiment tests: a tiny T-Maze job that runs in seconds."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

TINY_JOB: dict[str, Any] = {
    "env": {"id": "tmaze-passive", "corridor_length": 3},
    "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 32, "d_output": 32, "normalize_inputs": False},
    "traj_encoder": {"kind": "transformer", "d_model": 32, "n_heads": 2, "d_ff": 64, "n_layers": 1},
    "agent": {"kind": "agent", "reward_multiplier": 100.0, "gamma": 0.9999},
    "exploration": {"kind": "egreedy", "eps_start": 1.0, "eps_end": 0.01, "steps_anneal": 400},
    "run": {"max_seq_len": 4, "seed": 3},
    "replay": {"traj_save_len": 4},
    "rollout": {"parallel_actors": 4, "sample_actions_val": False},
    "schedule": {
        "epochs": 3,
        "train_timesteps_per_epoch": 8,
        "train_batches_per_epoch": 4,
        "val_interval": 1,
        "val_timesteps_per_epoch": 8,
        "ckpt_interval": 1,
    },
    "optim": {"batch_size": 8, "lr_warmup_steps": 10},
    "logging": {"verbose": False, "plot": True},
}


@pytest.fixture
def tiny_job(tmp_path) -> dict[str, Any]:
    """The tiny job with its run folder under tmp_path."""
    job = {key: dict(value) if isinstance(value, dict) else value for key, value in TINY_JOB.items()}
    job["run"] = {**TINY_JOB["run"], "ckpt_base_dir": str(tmp_path / "runs"), "name": "tiny"}
    return job


@pytest.fixture
def run_job() -> Callable[..., Any]:
    """``run_job(job, **settings)``: builds the job (a config tree) with flat settings on top, trains it to the
    end, closes it and returns the experiment."""
    from amago import Experiment
    from amago_core.config.sources import load_config

    def run(job: dict[str, Any], **settings: Any) -> Any:
        experiment = Experiment(load_config(base=job, environ={}), **settings)
        experiment.start()
        try:
            experiment.learn()
        finally:
            experiment.close()
        return experiment

    return run


def learnable_tmaze_job(folder: Any, corridor: int, name: str, *, steps_anneal: int) -> dict[str, Any]:
    """The embedded main job at tiny sizes, seeded: a T-Maze with a ``corridor``-cell corridor that the default
    agent solves in seconds (8 actors, 40 epochs of 20 updates, validation every 2 epochs), in ``folder``."""
    from amago.default_job import DEFAULT_JOB

    job = json.loads(json.dumps(DEFAULT_JOB))
    job["env"]["corridor_length"] = corridor
    job["run"].update(max_seq_len=corridor + 1, seed=1, ckpt_base_dir=str(folder), name=name)
    job["replay"]["traj_save_len"] = corridor + 1
    job["tstep_encoder"].update(d_hidden=64, d_output=64)
    job["traj_encoder"].update(d_model=32, n_layers=1, d_ff=64, n_heads=4)
    job["rollout"]["parallel_actors"] = 8
    job["exploration"]["steps_anneal"] = steps_anneal
    job["optim"] = {"learning_rate": 5e-4, "lr_warmup_steps": 50}
    job["schedule"].update(
        epochs=40,
        train_timesteps_per_epoch=3 * (corridor + 1),
        train_batches_per_epoch=20,
        val_interval=2,
        val_timesteps_per_epoch=2 * (corridor + 1),
        ckpt_interval=None,
    )
    job["logging"] = {"verbose": False, "plot": False}
    return job


def stop_when_solved(experiment: Any) -> list[float]:
    """Makes ``experiment`` stop at the first val return of 1.0; returns the list its val returns go into."""
    from amago_core.experiment.metrics import AVERAGE_RETURN_KEY

    history: list[float] = []
    evaluate = experiment.evaluate_val

    def evaluate_and_stop() -> Any:
        metrics = evaluate()
        history.append(metrics[AVERAGE_RETURN_KEY])
        if metrics[AVERAGE_RETURN_KEY] >= 0.999:
            experiment.request_stop()
        return metrics

    experiment.evaluate_val = evaluate_and_stop
    return history
