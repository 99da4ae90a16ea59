"""Example 09: multi-game two-attempt Procgen (AMAGO-2) with AMAGO's example-09 settings.

procgen needs its own environment: ``pip install "amago-envs[procgen]"`` (procgen-mirror, numpy<2, gym 0.26),
which conflicts with the jax suites. Where procgen is missing this script prints one line naming that
command on stderr and exits with status 2.

    python examples/09_procgen.py --distribution memory-hard --run-name procgen
    python examples/09_procgen.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import add_common_flags, launch

from amago_core.plugins.errors import PluginError

HORIZONS = {"easy": 2000, "easy-rescaled": 2000, "memory-hard": 5000}

SMOKE: dict[str, Any] = {
    "env": {"games": ["coinrun"], "horizon": 16},
    "traj_encoder": {"kind": "rnn", "d_hidden": 16, "n_layers": 1, "d_output": 16},
    "tstep_encoder": {
        "kind": "cnn",
        "cnn_type": "nature",
        "img_features": 16,
        "d_output": 16,
        "drqv2_aug": False,
    },
    "rollout": {"parallel_actors": 2},
    "schedule": {
        "epochs": 1,
        "train_timesteps_per_epoch": 8,
        "train_batches_per_epoch": 1,
        "val_interval": 1,
    },
    "optim": {"batch_size": 2},
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on unseen levels, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--distribution", default="easy", choices=sorted(HORIZONS))
    parser.add_argument("--train-seeds", type=int, default=10_000, help="train levels are [0, train_seeds]")
    parser.add_argument("--max-seq-len", type=int, default=256)
    parser.add_argument("--parallel-actors", type=int, default=12)
    add_common_flags(parser, epochs=1000, run_name="procgen")
    args = parser.parse_args(argv)
    horizon = 16 if args.smoke else HORIZONS[args.distribution]
    seq_len = 8 if args.smoke else args.max_seq_len
    env_id = f"procgen-{args.distribution}"
    job: dict[str, Any] = {
        "env": {"id": env_id, "train_seeds": args.train_seeds},
        "rollout": {"parallel_actors": args.parallel_actors},
        "run": {"max_seq_len": seq_len},
        "replay": {"traj_save_len": 4 * seq_len},
        "schedule": {"val_timesteps_per_epoch": 5 * horizon + 1},
    }
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=horizon if args.smoke else 20 * horizon,
        name="09_procgen",
        missing=(PluginError,),
    )


if __name__ == "__main__":
    main()
