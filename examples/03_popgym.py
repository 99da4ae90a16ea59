"""Example 03: POPGym memory tasks (or AMAGO-2's multi-domain mix) with the settings of AMAGO's example 03.

The ``popgym`` suite's preset supplies what the AMAGO paper reused across every POPGym task: a 2000-step
context with learned positions, 18 discount factors, rewards x100 (x200 for ``--multidomain``), a slow target
network and near-greedy discrete policies.

    python examples/03_popgym.py --env autoencode-easy --run-name autoencode
    python examples/03_popgym.py --multidomain
    python examples/03_popgym.py --smoke
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
    parser.add_argument("--env", default="autoencode-easy", help="POPGym task, e.g. repeat-previous-easy")
    parser.add_argument("--multidomain", action="store_true", help="AMAGO-2's 27-task MultiDomainPOPGym")
    parser.add_argument("--max-seq-len", type=int, default=2000)
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--run-name", default="03_popgym")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
    args = parser.parse_args(argv)
    env_id = "popgym-multidomain" if args.multidomain else f"popgym-{args.env}"
    # Trajectory files, validation rollouts and learned positions all cover at least one 2000-step horizon.
    horizon = 16 if args.smoke else max(args.max_seq_len, 2000)
    seq_len = 8 if args.smoke else args.max_seq_len
    job: dict[str, Any] = {
        "env": {"id": env_id},
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": seq_len},
        "replay": {"traj_save_len": horizon},
        "schedule": {"epochs": args.epochs, "val_timesteps_per_epoch": horizon},
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    if args.traj_encoder == "transformer":
        job["traj_encoder"]["max_time_idx"] = horizon
    with tempfile.TemporaryDirectory(prefix="amago-03_popgym-") as scratch:
        if args.smoke:
            job = deep_merge(job, SMOKE)
            job["run"]["ckpt_base_dir"] = scratch
        config = ExperimentConfig.model_validate(deep_merge(preset_for_env(env_id) or {}, job))
        experiment = build_experiment(config)
        experiment.start()
        try:
            experiment.learn()
            metrics = experiment.evaluate_test(
                experiment.make_val_env, 10 * config.schedule.val_timesteps_per_epoch
            )
        finally:
            experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
