"""Example 01: any gymnasium env (an MDP is a special case of AMAGO's setting), with example 01's settings.

The ``gym`` suite's preset supplies a 128-step context, trajectory files 8x that long, no reward scaling and a
discrete policy allowed to become fully greedy. dm_control tasks go through shimmy: ``dm-control-cheetah-run-v0``.

    python examples/01_gym.py --env CartPole-v1 --run-name cartpole
    python examples/01_gym.py --env dm-control-cheetah-run-v0 --max-seq-len 64
    python examples/01_gym.py --smoke
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
    parser.add_argument("--env", default="CartPole-v1", help="gymnasium id (path-safe spelling works too)")
    parser.add_argument("--max-seq-len", type=int, default=128)
    parser.add_argument("--eval-timesteps", type=int, default=1000)
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--run-name", default="gym")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
    args = parser.parse_args(argv)
    env_id = f"gym-{args.env}"
    seq_len = 8 if args.smoke else args.max_seq_len
    job: dict[str, Any] = {
        "env": {"id": env_id},
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": seq_len},
        "replay": {"traj_save_len": 8 * seq_len},
        "schedule": {"epochs": args.epochs, "val_timesteps_per_epoch": args.eval_timesteps},
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    with tempfile.TemporaryDirectory(prefix="amago-01-") as scratch:
        if args.smoke:
            job = deep_merge(job, SMOKE)
            job["run"]["ckpt_base_dir"] = scratch
        config = ExperimentConfig.model_validate(deep_merge(preset_for_env(env_id) or {}, job))
        experiment = build_experiment(config)
        experiment.start()
        try:
            experiment.learn()
            # The smoke job still evaluates long enough for random CartPole play to finish episodes.
            eval_steps = 200 if args.smoke else args.eval_timesteps
            metrics = experiment.evaluate_test(experiment.make_val_env, eval_steps)
        finally:
            experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
