"""Tiny trained runs (a few seconds each) shared by the policy tests: one per trajectory encoder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TRAJ_ENCODERS: dict[str, dict[str, Any]] = {
    "ff": {"kind": "ff", "d_model": 32, "n_layers": 1},
    "rnn": {"kind": "rnn", "d_hidden": 32, "d_output": 32, "n_layers": 1},
    # Two layers and a context of 4 (max_seq_len) under 12-step rollouts: the KV cache wraps around.
    "transformer": {"kind": "transformer", "d_model": 32, "n_heads": 2, "d_ff": 64, "n_layers": 2},
    "mamba": {"kind": "mamba", "d_model": 32, "n_layers": 1},
}


def tiny_job(traj_encoder: dict[str, Any], base: Path, name: str) -> dict[str, Any]:
    """Two epochs of T-Maze (corridor 3, episodes of 4 steps) with tiny networks."""
    return {
        "env": {"id": "tmaze-passive", "corridor_length": 3},
        "tstep_encoder": {
            "kind": "ff",
            "n_layers": 1,
            "d_hidden": 32,
            "d_output": 32,
            "normalize_inputs": False,
        },
        "traj_encoder": traj_encoder,
        "agent": {"kind": "agent", "reward_multiplier": 100.0},
        "run": {"max_seq_len": 4, "seed": 3, "ckpt_base_dir": str(base), "name": name},
        "replay": {"traj_save_len": 4},
        "rollout": {"parallel_actors": 2},
        "schedule": {
            "epochs": 2,
            "train_timesteps_per_epoch": 8,
            "train_batches_per_epoch": 2,
            "val_interval": None,
            "ckpt_interval": 1,
        },
        "optim": {"batch_size": 4},
        "logging": {"verbose": False, "plot": False},
    }


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory) -> Callable[[str], Path]:
    """``trained_run(encoder)``: the folder of a tiny run with that trajectory encoder (trained once)."""
    from amago_core.experiment import Experiment

    base = tmp_path_factory.mktemp("policy_runs")
    made: dict[str, Path] = {}

    def run_for(encoder: str) -> Path:
        if encoder not in made:
            experiment = Experiment(tiny_job(TRAJ_ENCODERS[encoder], base, encoder))
            experiment.start()
            try:
                experiment.learn()
            finally:
                experiment.close()
            made[encoder] = base / encoder
        return made[encoder]

    return run_for
