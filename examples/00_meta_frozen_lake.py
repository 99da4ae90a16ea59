"""Example 00: Meta-Frozen-Lake, black-box meta-RL, with the hyperparameters of AMAGO's example 00.

Each rollout is ``--k-episodes`` attempts on one random lake; a memory agent learns to avoid the holes it
fell into on earlier attempts. The suite's preset supplies memory 128 x 3 layers, the small timestep encoder,
tau 0.004 and a 1M-step epsilon schedule; this script sets the rollout length from the lake size and k.

    python examples/00_meta_frozen_lake.py --traj-encoder transformer --run-name lake
    python examples/00_meta_frozen_lake.py --smoke
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
    """Trains, evaluates on fresh lakes, prints and returns the test metrics (success per attempt)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traj-encoder", default="transformer", help="ff, transformer, rnn or mamba")
    parser.add_argument("--lake-size", type=int, default=5)
    parser.add_argument("--k-episodes", type=int, default=10)
    parser.add_argument("--hard-mode", action="store_true")
    parser.add_argument("--recover-mode", action="store_true")
    parser.add_argument("--epochs", type=int, default=700)
    parser.add_argument("--run-name", default="meta-frozen-lake")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
    args = parser.parse_args(argv)
    size, k = (3, 2) if args.smoke else (args.lake_size, args.k_episodes)
    attempt = size**2 * (2 if args.hard_mode else 1)  # the env's per-attempt step limit (no slipping)
    rollout = attempt * k
    job: dict[str, Any] = {
        "env": {
            "id": "frozen-lake",
            "size": size,
            "k_episodes": k,
            "hard_mode": args.hard_mode,
            "recover_mode": args.recover_mode,
        },
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": rollout},
        "replay": {"traj_save_len": rollout},
        "schedule": {
            "epochs": 900 if args.hard_mode and args.epochs == 700 else args.epochs,
            "train_timesteps_per_epoch": rollout,
            "val_timesteps_per_epoch": 2 * rollout,
        },
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    if args.smoke:
        job = deep_merge(job, SMOKE)
        job["run"]["ckpt_base_dir"] = tempfile.mkdtemp(prefix="amago-00-")
    config = ExperimentConfig.model_validate(deep_merge(preset_for_env("frozen-lake") or {}, job))
    experiment = build_experiment(config)
    experiment.start()
    try:
        experiment.learn()
        metrics = experiment.evaluate_test(experiment.make_val_env, 2 * rollout if args.smoke else 10_000)
    finally:
        experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
