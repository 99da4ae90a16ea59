"""Example 10: multi-task BabyAI meta-RL (AMAGO-2), with the settings of AMAGO's example 10.

Each episode is a random BabyAI level and layout; the agent gets ``--k-episodes`` attempts at it and logs
``Episode {n} Success`` per attempt and level. Training uses 50 levels and ``--train-seeds`` layouts; evaluation
uses every level of the mix on unseen layouts. The ``babyai`` suite's preset supplies rewards x1000, a 512-step
context, trajectory files 3x that long and exploration annealed over 500k steps.

    python examples/10_babyai.py --obs-kind partial-grid --run-name babyai
    python examples/10_babyai.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_RNN, add_common_flags, launch

# The example's own encoder (grid CNN + mission RNN), shrunk: the preset picks it, the smoke job sizes it.
SMOKE = {**TINY_RNN, "tstep_encoder": {"kind": "babyai", "cnn_channels": [8, 8, 8], "d_output": 16}}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on fresh envs, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--obs-kind",
        default="partial-grid",
        choices=["partial-grid", "full-grid", "partial-image", "full-image"],
    )
    parser.add_argument("--k-episodes", type=int, default=2)
    parser.add_argument("--train-seeds", type=int, default=5000)
    parser.add_argument("--max-seq-len", type=int, default=512)
    add_common_flags(parser, epochs=1000, run_name="10_babyai")
    args = parser.parse_args(argv)
    env_id = "babyai-multitask"
    seq_len = 8 if args.smoke else args.max_seq_len
    job: dict[str, Any] = {
        "env": {
            "id": env_id,
            "obs_kind": args.obs_kind,
            "k_episodes": args.k_episodes,
            "train_seeds": args.train_seeds,
        },
        "run": {"max_seq_len": seq_len},
        "replay": {"traj_save_len": 3 * seq_len},
    }
    return launch(job, args, smoke_job=SMOKE, eval_timesteps=16 if args.smoke else 20_000, name="10_babyai")


if __name__ == "__main__":
    main()
