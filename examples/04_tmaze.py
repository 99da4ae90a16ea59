"""Example 04: T-Maze long-term recall (Ni et al., 2023) with the hyperparameters of AMAGO's example 04.

The goal side is shown once at the start; after ``--horizon`` corridor cells the agent must turn to it.
The suite's preset supplies argmax actions, reward x100 and gamma 0.9999; this script sets the lengths that
follow from the horizon (one whole episode per sequence and file).

    python examples/04_tmaze.py --horizon 100 --run-name tmaze100
    python examples/04_tmaze.py --smoke
"""

from __future__ import annotations

import argparse
import json
import tempfile
from typing import Any

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.presets import preset_for_env
from amago_core.config.sources import deep_merge
from amago_core.experiment.builder import build_experiment

SMOKE: dict[str, Any] = {
    "traj_encoder": {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1},
    "tstep_encoder": {"kind": "ff", "d_hidden": 16, "d_output": 16},
    "rollout": {"parallel_actors": 2},
    "schedule": {"epochs": 1, "train_batches_per_epoch": 2, "val_interval": 1},
    "optim": {"batch_size": 2},
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on fresh envs, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--horizon", type=int, default=10, help="corridor length (the memory span)")
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--run-name", default="tmaze")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
    args = parser.parse_args(argv)
    horizon = 3 if args.smoke else args.horizon
    length = horizon + 1  # the passive T-Maze episode: the corridor plus the junction step
    job: dict[str, Any] = {
        "env": {"id": "tmaze-passive", "corridor_length": horizon},
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": length},
        "replay": {"traj_save_len": length},
        "schedule": {
            "epochs": args.epochs,
            "train_timesteps_per_epoch": length,
            "val_timesteps_per_epoch": length,
        },
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    if args.smoke:
        job = deep_merge(job, SMOKE)
        job["run"]["ckpt_base_dir"] = tempfile.mkdtemp(prefix="amago-04-")
    config = ExperimentConfig.model_validate(deep_merge(preset_for_env("tmaze-passive") or {}, job))
    experiment = build_experiment(config)
    experiment.start()
    try:
        experiment.learn()
        metrics = experiment.evaluate_test(experiment.make_val_env, 5 * length)
    finally:
        experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
