"""Example 06: symbolic DM Alchemy with AMAGO's example-06 settings.

dm_alchemy is published on GitHub only, so it is not an amago-envs extra; install it with
``pip install git+https://github.com/deepmind/dm_alchemy``. Without it this script (``--smoke`` included)
prints one line naming that command on stderr and exits with status 2; with it, ``--smoke`` trains for one
tiny epoch and exits 0.

    python examples/06_alchemy.py --run-name alchemy
    python examples/06_alchemy.py --smoke
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from typing import Any

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.presets import preset_for_env
from amago_core.config.sources import deep_merge
from amago_core.experiment.builder import build_experiment
from amago_core.plugins.errors import PluginError

MISSING_EXIT_CODE = 2
"""Exit status when dm_alchemy is not installed (the message names the install command)."""

SMOKE: dict[str, Any] = {
    "env": {"num_trials": 2, "max_steps_per_trial": 3},
    "traj_encoder": {"kind": "rnn", "d_hidden": 16, "n_layers": 1, "d_output": 16},
    "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 16},
    "exploration": {"rollout_horizon": 6},
    "rollout": {"parallel_actors": 2},
    "schedule": {
        "epochs": 1,
        "train_timesteps_per_epoch": 7,
        "train_batches_per_epoch": 2,
        "val_interval": 1,
    },
    "optim": {"batch_size": 4},
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on new chemistries, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--eval-timesteps", type=int, default=20_000)
    parser.add_argument("--run-name", default="alchemy")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
    args = parser.parse_args(argv)
    length = 7 if args.smoke else 201  # one whole episode (10 trials x 20 steps) plus its first observation
    job: dict[str, Any] = {
        "env": {"id": "alchemy"},
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": length},
        "replay": {"traj_save_len": length},
        "schedule": {"epochs": args.epochs, "val_timesteps_per_epoch": 2000 if not args.smoke else length},
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    if args.smoke:
        job = deep_merge(job, SMOKE)
        job["run"]["ckpt_base_dir"] = tempfile.mkdtemp(prefix="amago-06-")
    try:
        config = ExperimentConfig.model_validate(deep_merge(preset_for_env("alchemy") or {}, job))
        experiment = build_experiment(config)
    except PluginError as exc:
        print(f"06_alchemy: {exc}", file=sys.stderr)
        raise SystemExit(MISSING_EXIT_CODE) from None
    experiment.start()
    try:
        experiment.learn()
        metrics = experiment.evaluate_test(
            experiment.make_val_env, length if args.smoke else args.eval_timesteps
        )
    finally:
        experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
