"""Example 00: Meta-Frozen-Lake, black-box meta-RL, with the hyperparameters of AMAGO's example 00.

Each rollout is ``--k-episodes`` attempts on one random lake; a memory agent learns to avoid the holes it
fell into on earlier attempts. The suite's preset supplies memory 128 x 3 layers, the small timestep encoder,
tau 0.004 and a 1M-step epsilon schedule; this script sets the rollout length from the lake size and k.

    python examples/00_meta_frozen_lake.py --traj-encoder transformer --run-name lake
    python examples/00_meta_frozen_lake.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_TRANSFORMER, add_common_flags, launch

SMOKE = TINY_TRANSFORMER


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on fresh lakes, prints and returns the test metrics (success per attempt)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lake-size", type=int, default=5)
    parser.add_argument("--k-episodes", type=int, default=10)
    parser.add_argument("--hard-mode", action="store_true")
    parser.add_argument("--recover-mode", action="store_true")
    add_common_flags(
        parser, epochs=700, run_name="meta-frozen-lake", traj_encoder_help="ff, transformer, rnn or mamba"
    )
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
        "run": {"max_seq_len": rollout},
        "replay": {"traj_save_len": rollout},
        "schedule": {
            "epochs": 900 if args.hard_mode and args.epochs == 700 else args.epochs,
            "train_timesteps_per_epoch": rollout,
            "val_timesteps_per_epoch": 2 * rollout,
        },
    }
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=2 * rollout if args.smoke else 10_000,
        name="00",
    )


if __name__ == "__main__":
    main()
