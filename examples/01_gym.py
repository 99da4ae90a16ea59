"""Example 01: any gymnasium env (an MDP is a special case of AMAGO's setting), with example 01's settings.

The ``gym`` suite's preset supplies a 128-step context, trajectory files 8x that long, no reward scaling and a
discrete policy allowed to become fully greedy. dm_control tasks go through shimmy: ``dm-control-cheetah-run-v0``.

    python examples/01_gym.py --env CartPole-v1 --run-name cartpole
    python examples/01_gym.py --env dm-control-cheetah-run-v0 --max-seq-len 64
    python examples/01_gym.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_RNN, add_common_flags, launch

SMOKE = TINY_RNN


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on fresh envs, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="CartPole-v1", help="gymnasium id (path-safe spelling works too)")
    parser.add_argument("--max-seq-len", type=int, default=128)
    parser.add_argument("--eval-timesteps", type=int, default=1000)
    add_common_flags(parser, epochs=1000, run_name="gym")
    args = parser.parse_args(argv)
    env_id = f"gym-{args.env}"
    seq_len = 8 if args.smoke else args.max_seq_len
    job: dict[str, Any] = {
        "env": {"id": env_id},
        "run": {"max_seq_len": seq_len},
        "replay": {"traj_save_len": 8 * seq_len},
        "schedule": {"val_timesteps_per_epoch": args.eval_timesteps},
    }
    # The smoke job still evaluates long enough for random CartPole play to finish episodes.
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=200 if args.smoke else args.eval_timesteps,
        name="01",
    )


if __name__ == "__main__":
    main()
