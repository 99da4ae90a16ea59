"""Example 05: Dark Key-To-Door finite-horizon meta-RL, with the hyperparameters of AMAGO's example 05.

The agent has ``--meta-horizon`` steps in one dark room to find the key and then the door as many times as it
can. The suite's preset supplies bilevel exploration over the meta-rollout, reward x100 and the small
timestep encoder; this script sets the lengths that follow from the meta-horizon.

    python examples/05_dark_key_door.py --run-name keydoor
    python examples/05_dark_key_door.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_TRANSFORMER, add_common_flags, launch

SMOKE = TINY_TRANSFORMER


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
    add_common_flags(parser, epochs=500, run_name="dark-key-door")
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
        "exploration": {"kind": "bilevel", "rollout_horizon": horizon},
        "run": {"max_seq_len": horizon},
        "replay": {"traj_save_len": horizon},
        "schedule": {
            # AMAGO's example collects its CLI default, 1,000 steps per actor per epoch; --smoke one rollout.
            "train_timesteps_per_epoch": horizon if args.smoke else 1000,
            "val_timesteps_per_epoch": 4 * horizon,
        },
    }
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=2 * horizon if args.smoke else 20_000,
        name="05",
    )


if __name__ == "__main__":
    main()
