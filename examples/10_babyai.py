"""Example 10: multi-task BabyAI meta-RL (AMAGO-2), with the settings of AMAGO's example 10.

Each episode is a random BabyAI level and layout; the agent gets ``--k-episodes`` attempts at it and logs
``Episode {n} Success`` per attempt and level. Training uses 50 levels and ``--train-seeds`` layouts; evaluation
uses every level of the mix on unseen layouts. The ``babyai`` suite's preset supplies rewards x1000, a 512-step
context, trajectory files 3x that long and exploration annealed over 500k steps.

    python examples/10_babyai.py --obs-kind partial-grid --run-name babyai
    python examples/10_babyai.py --smoke
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
    "traj_encoder": {"kind": "rnn", "d_hidden": 16, "d_output": 16, "n_layers": 1},
    "tstep_encoder": {"kind": "ff", "d_hidden": 16, "d_output": 16},
    "rollout": {"parallel_actors": 2},
    "schedule": {
        "epochs": 1,
        "train_timesteps_per_epoch": 16,
        "train_batches_per_epoch": 2,
        "val_interval": None,
        "val_timesteps_per_epoch": 16,
    },
    "optim": {"batch_size": 2},
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on fresh envs, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--obs-kind",
        default="partial-grid",
        choices=["partial-grid", "full-grid", "partial-image", "full-image"],
    )
    parser.add_argument("--k-episodes", type=int, default=2)
    parser.add_argument("--train-seeds", type=int, default=5000)
    parser.add_argument("--max-seq-len", type=int, default=512)
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--run-name", default="10_babyai")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
    args = parser.parse_args(argv)
    env_id = "babyai-multitask"
    seq_len = 8 if args.smoke else args.max_seq_len
    job: dict[str, Any] = {
        "env": {
            "id": env_id,
            "obs_kind": args.obs_kind,
            "k_episodes": args.k_episodes,
            "train_seeds": args.train_seeds,
        },
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": seq_len},
        "replay": {"traj_save_len": 3 * seq_len},
        "schedule": {"epochs": args.epochs},
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    with tempfile.TemporaryDirectory(prefix="amago-10_babyai-") as scratch:
        if args.smoke:
            job = deep_merge(job, SMOKE)
            job["run"]["ckpt_base_dir"] = scratch
        config = ExperimentConfig.model_validate(deep_merge(preset_for_env(env_id) or {}, job))
        experiment = build_experiment(config)
        experiment.start()
        try:
            experiment.learn()
            metrics = experiment.evaluate_test(experiment.make_val_env, 16 if args.smoke else 20_000)
        finally:
            experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
