"""Example 04: T-Maze long-term recall (Ni et al., 2023) with the hyperparameters of AMAGO's example 04.

The goal side is shown once at the start; after ``--horizon`` corridor cells the agent must turn to it.
The suite's preset supplies argmax actions, reward x100 and gamma 0.9999; this script sets the lengths that
follow from the horizon (one whole episode per sequence and file).

    python examples/04_tmaze.py --horizon 100 --run-name tmaze100
    python examples/04_tmaze.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_TRANSFORMER, add_common_flags, launch

SMOKE = TINY_TRANSFORMER


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on fresh envs, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--horizon", type=int, default=10, help="corridor length (the memory span)")
    add_common_flags(parser, epochs=100, run_name="tmaze")
    args = parser.parse_args(argv)
    horizon = 3 if args.smoke else args.horizon
    length = horizon + 1  # the passive T-Maze episode: the corridor plus the junction step
    job: dict[str, Any] = {
        "env": {"id": "tmaze-passive", "corridor_length": horizon},
        "run": {"max_seq_len": length},
        "replay": {"traj_save_len": length},
        "schedule": {
            # AMAGO's example collects its CLI default, 1,000 steps per actor per epoch; --smoke one episode.
            "train_timesteps_per_epoch": length if args.smoke else 1000,
            "val_timesteps_per_epoch": length,
        },
    }
    return launch(job, args, smoke_job=SMOKE, eval_timesteps=5 * length, name="04")


if __name__ == "__main__":
    main()
