"""Example 05: Dark Key-To-Door finite-horizon meta-RL, with the hyperparameters of AMAGO's example 05.

The agent has ``--meta-horizon`` steps in one dark room to find the key and then the door as many times as it
can. The suite's preset supplies bilevel exploration over the meta-rollout, reward x100 and the small
timestep encoder; this script sets the lengths that follow from the meta-horizon.

    python examples/05_dark_key_door.py --run-name keydoor
    python examples/05_dark_key_door.py --smoke
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
    """Trains, evaluates on fresh rooms, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--meta-horizon", type=int, default=500)
    parser.add_argument("--room-size", type=int, default=8)
    parser.add_argument("--episode-length", type=int, default=50)
    parser.add_argument(
        "--light-room-observation", action="store_true", help="show key and door (no memory needed)"
    )
    parser.add_argument("--randomize-actions", action="store_true")
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=500)
    parser.add_argument("--run-name", default="dark-key-door")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
    args = parser.parse_args(argv)
    horizon, episode = (12, 6) if args.smoke else (args.meta_horizon, args.episode_length)
    job: dict[str, Any] = {
        "env": {
            "id": "key-door",
            "dark": not args.light_room_observation,
            "size": 4 if args.smoke else args.room_size,
            "max_episode_steps": episode,
            "meta_rollout_horizon": horizon,
            "randomize_actions": args.randomize_actions,
        },
        "traj_encoder": {"kind": args.traj_encoder},
        "exploration": {"kind": "bilevel", "rollout_horizon": horizon},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": horizon},
        "replay": {"traj_save_len": horizon},
        "schedule": {
            "epochs": args.epochs,
            "train_timesteps_per_epoch": horizon,
            "val_timesteps_per_epoch": 4 * horizon,
        },
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    if args.smoke:
        job = deep_merge(job, SMOKE)
        job["run"]["ckpt_base_dir"] = tempfile.mkdtemp(prefix="amago-05-")
    config = ExperimentConfig.model_validate(deep_merge(preset_for_env("key-door") or {}, job))
    experiment = build_experiment(config)
    experiment.start()
    try:
        experiment.learn()
        metrics = experiment.evaluate_test(experiment.make_val_env, 2 * horizon if args.smoke else 20_000)
    finally:
        experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
