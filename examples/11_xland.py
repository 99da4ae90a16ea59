"""Example 11: XLand-MiniGrid meta-RL, k episodes per ruleset, with AMAGO's example-11 settings.

Rulesets come from ``--benchmark``: ``local-trivial`` … ``local-high`` are generated here offline;
xminigrid's published benchmarks (``small-1m`` …) must already be on disk (the suite never downloads and
says how to pre-fetch them). One trajectory file holds a whole k-episode rollout of one ruleset.

    python examples/11_xland.py --benchmark local-small --k-episodes 15 --run-name xland
    python examples/11_xland.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import add_common_flags, launch

from amago_core.plugins.errors import PluginError

SMOKE: dict[str, Any] = {
    "env": {"num_rulesets": 20},
    "traj_encoder": {"kind": "rnn", "d_hidden": 16, "n_layers": 1, "d_output": 16},
    "tstep_encoder": {"kind": "xland", "cnn_channels": [8, 8, 8], "d_output": 16},
    "schedule": {"epochs": 1, "train_batches_per_epoch": 2, "val_interval": 1},
    "optim": {"batch_size": 4},
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on held-out rulesets, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--benchmark", default="local-small", help="local-trivial … local-high, or small-1m …"
    )
    parser.add_argument("--k-episodes", type=int, default=15, help="episodes per ruleset")
    parser.add_argument("--rooms", type=int, default=1)
    parser.add_argument("--grid-size", type=int, default=9)
    parser.add_argument("--max-seq-len", type=int, default=2048)
    parser.add_argument("--parallel-actors", type=int, default=16, help="rows in the jax batch")
    parser.add_argument("--timesteps-per-epoch", type=int, default=1000)
    add_common_flags(parser, epochs=1000, run_name="xland")
    args = parser.parse_args(argv)
    k = 2 if args.smoke else args.k_episodes
    max_steps = 4 if args.smoke else 3 * args.grid_size**2  # xminigrid's default episode limit
    actors = 2 if args.smoke else args.parallel_actors
    per_epoch = 9 if args.smoke else args.timesteps_per_epoch
    traj_len = k * max_steps + 1  # a whole k-episode rollout, plus its first observation
    env_id = f"xland-{'local-trivial' if args.smoke else args.benchmark}"
    job: dict[str, Any] = {
        "env": {
            "id": env_id,
            "num_envs": actors,
            "k_episodes": k,
            "rooms": args.rooms,
            "grid_size": args.grid_size,
            "max_steps": max_steps,
        },
        "rollout": {"env_mode": "already_vectorized", "parallel_actors": actors},
        "run": {
            "max_seq_len": min(args.max_seq_len, traj_len),
        },
        "replay": {"traj_save_len": traj_len, "stagger_traj_file_lengths": False},
        "schedule": {
            "train_timesteps_per_epoch": per_epoch,
            "val_timesteps_per_epoch": traj_len,
            "start_learning_at_epoch": traj_len // per_epoch,
        },
    }
    # A missing benchmark file is a ValueError with the fix in it.
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=traj_len,
        name="11_xland",
        missing=(PluginError, ValueError),
    )


if __name__ == "__main__":
    main()
