"""Example 13: MazeRunner with hindsight instruction relabeling (AMAGO's example 13, App. B/C.4 of the paper).

The agent must reach ``--goals`` cells in order in a random maze. Stored episodes are relabeled as they are
loaded: cells the agent happened to reach become goals it was "asked" to reach (``--relabel some``/``all``),
turning failures into successes for some instruction. Whole episodes are saved per file (the relabeler
rewrites them whole) and the policy reads only ``obs`` and ``goals`` (``achieved`` is the relabeler's key).
The relabeler is a component: ``replay.relabeler = {kind = "hindsight", strategy = "some"}`` in a config, or
``amago run --env mazerunner -o replay.relabeler=hindsight``.

    python examples/13_mazerunner_relabel.py --relabel some --run-name maze
    python examples/13_mazerunner_relabel.py --smoke
"""

from __future__ import annotations

import argparse
from typing import Any

from _launch import TINY_TRANSFORMER, add_common_flags, launch

SMOKE = TINY_TRANSFORMER


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains with relabeled replay, evaluates on fresh mazes, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--maze-size", type=int, default=11)
    parser.add_argument("--goals", type=int, default=3)
    parser.add_argument("--time-limit", type=int, default=250)
    parser.add_argument("--relabel", choices=["some", "all", "none"], default="some")
    parser.add_argument("--randomized-actions", action="store_true")
    add_common_flags(parser, epochs=500, run_name="mazerunner-relabel")
    args = parser.parse_args(argv)
    limit = 12 if args.smoke else args.time_limit
    job: dict[str, Any] = {
        "env": {
            "id": "mazerunner",
            "maze_dim": 7 if args.smoke else args.maze_size,
            "num_goals": args.goals,
            "time_limit": limit,
            "randomized_action_space": args.randomized_actions,
            "relabel_info": True,
        },
        "tstep_encoder": {
            "kind": "ff",
            "n_layers": 2,
            "d_hidden": 128,
            "d_output": 256,
            "obs_keys": ["obs", "goals"],
        },
        "exploration": {"kind": "egreedy", "steps_anneal": 500_000},
        "run": {"max_seq_len": limit},
        # One file per whole episode: relabeling needs the episode from its first goal to its end.
        "replay": {
            "traj_save_len": limit + 1,
            "stagger_traj_file_lengths": False,
            # The encoder reads obs and goals only, so the relabeled files can drop the answer key.
            "relabeler": {"kind": "hindsight", "strategy": args.relabel, "drop_achieved": True},
        },
        "schedule": {
            # AMAGO's example collects its CLI default, 1,000 steps per actor per epoch; --smoke one episode.
            "train_timesteps_per_epoch": limit + 1 if args.smoke else 1000,
            "val_timesteps_per_epoch": 5 * limit,
        },
    }

    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=5 * limit if args.smoke else 20 * limit,
        name="13",
    )


if __name__ == "__main__":
    main()
