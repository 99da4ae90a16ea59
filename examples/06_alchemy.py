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
from typing import Any

from _launch import add_common_flags, launch

from amago_core.plugins.errors import PluginError

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
    parser.add_argument("--eval-timesteps", type=int, default=20_000)
    add_common_flags(parser, epochs=1000, run_name="alchemy")
    args = parser.parse_args(argv)
    length = 7 if args.smoke else 201  # one whole episode (10 trials x 20 steps) plus its first observation
    job: dict[str, Any] = {
        "env": {"id": "alchemy"},
        "run": {"max_seq_len": length},
        "replay": {"traj_save_len": length},
        "schedule": {"val_timesteps_per_epoch": 2000 if not args.smoke else length},
    }
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=length if args.smoke else args.eval_timesteps,
        name="06_alchemy",
        missing=(PluginError,),
    )


if __name__ == "__main__":
    main()
