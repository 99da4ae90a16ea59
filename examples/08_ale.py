"""Example 08: multi-game Atari on unclipped rewards, with the settings of AMAGO's example 08.

A random game per episode from ``--games`` (metrics are logged per game). The ``ale`` suite's preset supplies
5-frame skip with sticky actions on colour frames, an IMPALA CNN (channels first, DrQ augmentation), rewards
x0.25, an 80-step context with files 3x that long, and 30 minutes of game time per evaluation.

    python examples/08_ale.py --games Pong Breakout --run-name atari2
    python examples/08_ale.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_RNN, add_common_flags, launch

SMOKE: dict[str, Any] = {
    **TINY_RNN,
    "env": {"resolution": [42, 42]},
    "tstep_encoder": {"kind": "cnn", "img_features": 16, "d_output": 16},
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains, evaluates on fresh envs, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", nargs="+", default=None, help="ALE games (default: AMAGO's ten)")
    parser.add_argument("--max-seq-len", type=int, default=80)
    parser.add_argument("--cnn", default="impala", choices=["impala", "nature"])
    add_common_flags(parser, epochs=1000, run_name="08_ale")
    args = parser.parse_args(argv)
    env_id = "ale-multigame"
    seq_len = 8 if args.smoke else args.max_seq_len
    env: dict[str, Any] = {"id": env_id}
    if args.games:
        env["games"] = args.games
    job: dict[str, Any] = {
        "env": env,
        "tstep_encoder": {"kind": "cnn", "cnn_type": args.cnn},
        "run": {"max_seq_len": seq_len},
        "replay": {"traj_save_len": 3 * seq_len},
    }
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=lambda config: 16 if args.smoke else 5 * config.schedule.val_timesteps_per_epoch,
        name="08_ale",
    )


if __name__ == "__main__":
    main()
