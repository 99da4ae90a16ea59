"""Example 13: MazeRunner with hindsight instruction relabeling (AMAGO's example 13, App. B/C.4 of the paper).

The agent must reach ``--goals`` cells in order in a random maze. Stored episodes are relabeled as they are
loaded: cells the agent happened to reach become goals it was "asked" to reach (``--relabel some``/``all``),
turning failures into successes for some instruction. Whole episodes are saved per file (the relabeler
rewrites them whole) and the policy reads only ``obs`` and ``goals`` (``achieved`` is the relabeler's key).

    python examples/13_mazerunner_relabel.py --relabel some --run-name maze
    python examples/13_mazerunner_relabel.py --smoke
"""

from __future__ import annotations

import argparse
import json
import tempfile
from typing import Any

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.presets import preset_for_env
from amago_core.config.sources import deep_merge
from amago_core.data.disk_buffer import DiskTrajDataset
from amago_core.experiment.builder import build_experiment
from amago_envs.suites.mazerunner_relabel import MazeRunnerHindsightRelabeler

SMOKE: dict[str, Any] = {
    "traj_encoder": {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1},
    "tstep_encoder": {"kind": "ff", "d_hidden": 16, "d_output": 16},
    "rollout": {"parallel_actors": 2},
    "schedule": {"epochs": 1, "train_batches_per_epoch": 2, "val_interval": 1},
    "optim": {"batch_size": 2},
}


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Trains with relabeled replay, evaluates on fresh mazes, prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--maze-size", type=int, default=11)
    parser.add_argument("--goals", type=int, default=3)
    parser.add_argument("--time-limit", type=int, default=250)
    parser.add_argument("--relabel", choices=["some", "all", "none"], default="some")
    parser.add_argument("--randomized-actions", action="store_true")
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=500)
    parser.add_argument("--run-name", default="mazerunner-relabel")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument("--smoke", action="store_true", help="a tiny job in a temp folder (seconds)")
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
        "traj_encoder": {"kind": args.traj_encoder},
        "exploration": {"kind": "egreedy", "steps_anneal": 500_000},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": limit},
        # One file per whole episode: relabeling needs the episode from its first goal to its end.
        "replay": {"traj_save_len": limit + 1, "stagger_traj_file_lengths": False},
        "schedule": {
            "epochs": args.epochs,
            "train_timesteps_per_epoch": limit + 1,
            "val_timesteps_per_epoch": 5 * limit,
        },
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    if args.smoke:
        job = deep_merge(job, SMOKE)
        job["run"]["ckpt_base_dir"] = tempfile.mkdtemp(prefix="amago-13-")
    config = ExperimentConfig.model_validate(deep_merge(preset_for_env("mazerunner") or {}, job))
    dataset = DiskTrajDataset(
        dset_root=config.run.ckpt_base_dir,
        dset_name=args.run_name,
        dset_max_size=config.replay.dset_max_size,
        relabeler=MazeRunnerHindsightRelabeler(num_goals=args.goals, strategy=args.relabel),
    )
    experiment = build_experiment(config, dataset=dataset)
    experiment.start()
    try:
        experiment.learn()
        metrics = experiment.evaluate_test(experiment.make_val_env, 5 * limit if args.smoke else 20 * limit)
    finally:
        experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
