"""Example 12: HalfCheetahVel, inferring a hidden target velocity from rewards (AMAGO's example 12).

Each episode draws a target velocity in ``[--task-min-velocity, --task-max-velocity]``; the reward is the
negative distance to it. The suite's preset supplies gamma 0.99, tau 0.005, lr 3e-4 and the 32-step policy
sequence. Needs ``pip install "amago-envs[half-cheetah-vel]"``.

    python examples/12_half_cheetah_vel.py --run-name cheetah
    python examples/12_half_cheetah_vel.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_TRANSFORMER, add_common_flags, launch

from amago_core.config.sources import deep_merge

SMOKE = deep_merge(
    TINY_TRANSFORMER,
    {
        "env": {"max_episode_steps": 10},
        "run": {"max_seq_len": 8},
        "replay": {"traj_save_len": 11},
        "schedule": {"train_timesteps_per_epoch": 11, "val_timesteps_per_epoch": 11},
    },
)


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates, prints and returns the test metrics (velocity tracking)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policy-seq-len", type=int, default=32)
    parser.add_argument("--eval-episodes-per-actor", type=int, default=1)
    parser.add_argument("--task-min-velocity", type=float, default=0.0)
    parser.add_argument("--task-max-velocity", type=float, default=3.0)
    add_common_flags(parser, epochs=1000, run_name="half-cheetah-vel")
    args = parser.parse_args(argv)
    job: dict[str, Any] = {
        "env": {
            "id": "half-cheetah-vel",
            "task_min_velocity": args.task_min_velocity,
            "task_max_velocity": args.task_max_velocity,
        },
        "run": {
            "max_seq_len": args.policy_seq_len,
        },
        "replay": {"traj_save_len": 6 * args.policy_seq_len},
        "schedule": {"val_timesteps_per_epoch": 1001 * args.eval_episodes_per_actor},
    }
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=lambda config: config.schedule.val_timesteps_per_epoch,
        name="12",
    )


if __name__ == "__main__":
    main()
