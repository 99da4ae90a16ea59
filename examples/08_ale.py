"""Example 08: multi-game Atari on unclipped rewards, with the settings of AMAGO's example 08.

A random game per episode from ``--games`` (metrics are logged per game). The ``ale`` suite's preset supplies
5-frame skip with sticky actions on colour frames, an IMPALA CNN (channels first, DrQ augmentation), rewards
x0.25, an 80-step context with files 3x that long, and 30 minutes of game time per evaluation.

    python examples/08_ale.py --games Pong Breakout --run-name atari2
    python examples/08_ale.py --smoke
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
    "env": {"resolution": [42, 42]},
    "traj_encoder": {"kind": "rnn", "d_hidden": 16, "d_output": 16, "n_layers": 1},
    "tstep_encoder": {"kind": "cnn", "img_features": 16, "d_output": 16},
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
    parser.add_argument("--games", nargs="+", default=None, help="ALE games (default: AMAGO's ten)")
    parser.add_argument("--max-seq-len", type=int, default=80)
    parser.add_argument("--cnn", default="impala", choices=["impala", "nature"])
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--run-name", default="08_ale")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
    args = parser.parse_args(argv)
    env_id = "ale-multigame"
    seq_len = 8 if args.smoke else args.max_seq_len
    env: dict[str, Any] = {"id": env_id}
    if args.games:
        env["games"] = args.games
    job: dict[str, Any] = {
        "env": env,
        "tstep_encoder": {"kind": "cnn", "cnn_type": args.cnn},
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": seq_len},
        "replay": {"traj_save_len": 3 * seq_len},
        "schedule": {"epochs": args.epochs},
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    with tempfile.TemporaryDirectory(prefix="amago-08_ale-") as scratch:
        if args.smoke:
            job = deep_merge(job, SMOKE)
            job["run"]["ckpt_base_dir"] = scratch
        config = ExperimentConfig.model_validate(deep_merge(preset_for_env(env_id) or {}, job))
        experiment = build_experiment(config)
        experiment.start()
        try:
            experiment.learn()
            metrics = experiment.evaluate_test(
                experiment.make_val_env, 16 if args.smoke else 5 * config.schedule.val_timesteps_per_epoch
            )
        finally:
            experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
