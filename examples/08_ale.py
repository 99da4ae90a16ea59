"""Example 08: multi-game Atari on unclipped rewards, with the settings of AMAGO's example 08.

Actors are pinned to the games of ``--games`` round-robin, so every game always gets its share of the data
(metrics are logged per game); ``--parallel-actors`` must be a multiple of the number of games (the preset
runs one actor per default game). The ``ale`` suite's preset supplies 5-frame skip with sticky actions on colour
frames, an IMPALA CNN (channels first, DrQ augmentation), rewards x0.25, an 80-step context with files 3x that
long, and 30 minutes of game time per evaluation.

    python examples/08_ale.py --games Pong Breakout --parallel-actors 8 --run-name atari2
    python examples/08_ale.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_RNN, add_common_flags, launch

SMOKE_GAMES = ["Pong", "Breakout"]
"""``--smoke``'s games when ``--games`` is not given: one per smoke actor."""

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
    parser.add_argument(
        "--parallel-actors",
        type=int,
        default=None,
        help="a multiple of the number of games (default 10: one per default game)",
    )
    add_common_flags(parser, epochs=1000, run_name="08_ale")
    args = parser.parse_args(argv)
    env_id = "ale-multigame"
    seq_len = 8 if args.smoke else args.max_seq_len
    env: dict[str, Any] = {"id": env_id}
    # --smoke's 2 actors play one game each (the default ten would need 10 actors).
    games = args.games or (SMOKE_GAMES if args.smoke else None)
    if games:
        env["games"] = games
    job: dict[str, Any] = {
        "env": env,
        "tstep_encoder": {"kind": "cnn", "cnn_type": args.cnn},
        "run": {"max_seq_len": seq_len},
        "replay": {"traj_save_len": 3 * seq_len},
    }
    if args.parallel_actors is not None:
        job["rollout"] = {"parallel_actors": args.parallel_actors}
    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=lambda config: 16 if args.smoke else 5 * config.schedule.val_timesteps_per_epoch,
        name="08_ale",
    )


if __name__ == "__main__":
    main()
