"""Example 12: HalfCheetahVel, inferring a hidden target velocity from rewards (AMAGO's example 12).

Each episode draws a target velocity in ``[--task-min-velocity, --task-max-velocity]``; the reward is the
negative distance to it. The suite's preset supplies gamma 0.99, tau 0.005, lr 3e-4 and the 32-step policy
sequence. Needs ``pip install "amago-envs[half-cheetah-vel]"``.

    python examples/12_half_cheetah_vel.py --run-name cheetah
    python examples/12_half_cheetah_vel.py --smoke
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
    "env": {"max_episode_steps": 10},
    "traj_encoder": {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1},
    "tstep_encoder": {"kind": "ff", "d_hidden": 16, "d_output": 16},
    "run": {"max_seq_len": 8},
    "replay": {"traj_save_len": 11},
    "rollout": {"parallel_actors": 2},
    "schedule": {
        "epochs": 1,
        "train_timesteps_per_epoch": 11,
        "train_batches_per_epoch": 2,
        "val_interval": 1,
        "val_timesteps_per_epoch": 11,
    },
    "optim": {"batch_size": 2},
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates, prints and returns the test metrics (velocity tracking)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policy-seq-len", type=int, default=32)
    parser.add_argument("--eval-episodes-per-actor", type=int, default=1)
    parser.add_argument("--task-min-velocity", type=float, default=0.0)
    parser.add_argument("--task-max-velocity", type=float, default=3.0)
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--run-name", default="half-cheetah-vel")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
    args = parser.parse_args(argv)
    job: dict[str, Any] = {
        "env": {
            "id": "half-cheetah-vel",
            "task_min_velocity": args.task_min_velocity,
            "task_max_velocity": args.task_max_velocity,
        },
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {
            "name": args.run_name,
            "ckpt_base_dir": args.ckpt_base_dir,
            "max_seq_len": args.policy_seq_len,
        },
        "replay": {"traj_save_len": 6 * args.policy_seq_len},
        "schedule": {"epochs": args.epochs, "val_timesteps_per_epoch": 1001 * args.eval_episodes_per_actor},
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    if args.smoke:
        job = deep_merge(job, SMOKE)
        job["run"]["ckpt_base_dir"] = tempfile.mkdtemp(prefix="amago-12-")
    config = ExperimentConfig.model_validate(deep_merge(preset_for_env("half-cheetah-vel") or {}, job))
    experiment = build_experiment(config)
    experiment.start()
    try:
        experiment.learn()
        metrics = experiment.evaluate_test(experiment.make_val_env, config.schedule.val_timesteps_per_epoch)
    finally:
        experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
