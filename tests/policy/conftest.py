"""Tiny trained runs (a few seconds each) shared by the policy tests: one per trajectory encoder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TRAJ_ENCODERS: dict[str, dict[str, Any]] = {
    "ff": {"kind": "ff", "d_model": 32, "n_layers": 1},
    "rnn": {"kind": "rnn", "d_hidden": 32, "d_output": 32, "n_layers": 1},
    # Two layers and a context of 4 (max_seq_len): a 4-step episode fills the KV cache exactly.
    "transformer": {"kind": "transformer", "d_model": 32, "n_heads": 2, "d_ff": 64, "n_layers": 2},
    # A context of 2 (MAX_SEQ_LEN below) under 4-step episodes: the KV cache wraps around twice per episode.
    # Without σReparam, whose no-grad weight cache torch.export cannot follow, so that ONNX exports too.
    "transformer-wrap": {
        "kind": "transformer",
        "d_model": 32,
        "n_heads": 2,
        "d_ff": 64,
        "n_layers": 2,
        "pos_emb": "rope",
        "sigma_reparam": False,
    },
    "mamba": {"kind": "mamba", "d_model": 32, "n_layers": 1},
}
MAX_SEQ_LEN = {"transformer-wrap": 2}
"""``run.max_seq_len`` of the runs that do not use the default of 4."""


def tiny_job(traj_encoder: dict[str, Any], base: Path, name: str, max_seq_len: int = 4) -> dict[str, Any]:
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
        "run": {"max_seq_len": max_seq_len, "seed": 3, "ckpt_base_dir": str(base), "name": name},
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
            experiment = Experiment(
                tiny_job(TRAJ_ENCODERS[encoder], base, encoder, MAX_SEQ_LEN.get(encoder, 4))
            )
            experiment.start()
            try:
                experiment.learn()
            finally:
                experiment.close()
            made[encoder] = base / encoder
        return made[encoder]

    return run_for
