"""Example 14: D4RL-style offline RL from a local minari dataset, then optional online fine-tuning.

The dataset's episodes are written into the run's protected buffer (never deleted), the agent trains on them
with the suite's offline preset (AMAGO's example 14: offline loss only, 5 critics, exp advantage filter,
Beta policy, argmax actions), and is evaluated in the dataset's environment. ``--online-after-epoch N`` adds
online collection from epoch N (offline -> online). Needs ``pip install "amago-envs[d4rl]"``; the dataset
must be local (``minari download ID`` where there is network access).

    python examples/14_d4rl.py --dataset mujoco/halfcheetah/medium-v0 --run-name hc-medium
    python examples/14_d4rl.py --smoke   # builds a tiny random-policy Pendulum dataset in a temp folder
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Any

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.presets import preset_for_env
from amago_core.config.sources import deep_merge
from amago_core.experiment.builder import build_experiment
from amago_envs.suites.d4rl.convert import convert_dataset
from amago_envs.suites.d4rl.specs import NEVER_COLLECT

SMOKE_DATASET = "amagosmoke/pendulum-random-v0"
SMOKE: dict[str, Any] = {
    "traj_encoder": {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1},
    "tstep_encoder": {"kind": "ff", "d_hidden": 16, "d_output": 16},
    "run": {"max_seq_len": 8},
    "rollout": {"parallel_actors": 2},
    "schedule": {"epochs": 2, "train_batches_per_epoch": 2, "val_interval": 1},
    "optim": {"batch_size": 2},
}


def make_smoke_dataset(episodes: int = 4, steps: int = 20) -> str:
    """Creates a small random-policy Pendulum dataset under a temp ``MINARI_DATASETS_PATH``; returns its id."""
    import gymnasium
    import minari

    os.environ["MINARI_DATASETS_PATH"] = tempfile.mkdtemp(prefix="amago-14-minari-")
    env = minari.DataCollector(gymnasium.make("Pendulum-v1", max_episode_steps=steps))
    for episode in range(episodes):
        env.reset(seed=episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
    env.create_dataset(dataset_id=SMOKE_DATASET, algorithm_name="random", author="amago", author_email="-",
                       code_permalink="-", description="random Pendulum for the smoke test")  # fmt: skip
    env.close()
    return SMOKE_DATASET


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Converts the dataset, trains offline (then online), prints and returns the test metrics."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", help="a local minari dataset id (required unless --smoke)")
    parser.add_argument("--max-seq-len", type=int, default=32)
    parser.add_argument("--online-after-epoch", type=int, default=None, help="collect online from this epoch")
    parser.add_argument("--eval-timesteps", type=int, default=1001)
    parser.add_argument("--traj-encoder", default="transformer")
    parser.add_argument("--epochs", type=int, default=500)
    parser.add_argument("--run-name", default="d4rl")
    parser.add_argument("--ckpt-base-dir", default="runs")
    parser.add_argument(
        "--smoke", action="store_true", help="a tiny dataset and job in temp folders (seconds)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.dataset, args.online_after_epoch = make_smoke_dataset(), 1
        args.ckpt_base_dir, args.eval_timesteps = tempfile.mkdtemp(prefix="amago-14-"), 21
    if not args.dataset:
        parser.error("--dataset is required (a local minari dataset id); or pass --smoke")
    files = convert_dataset(args.dataset, args.ckpt_base_dir, args.run_name)
    print(f"converted {len(files)} episodes of {args.dataset} into the protected buffer")
    job: dict[str, Any] = {
        "env": {"id": "d4rl", "dataset": args.dataset},
        "traj_encoder": {"kind": args.traj_encoder},
        "run": {"name": args.run_name, "ckpt_base_dir": args.ckpt_base_dir, "max_seq_len": args.max_seq_len},
        "schedule": {
            "epochs": args.epochs,
            "start_collecting_at_epoch": NEVER_COLLECT
            if args.online_after_epoch is None
            else args.online_after_epoch,
            "train_timesteps_per_epoch": args.eval_timesteps,
            "val_timesteps_per_epoch": args.eval_timesteps,
        },
        "logging": {"verbose": not args.smoke, "plot": False},
    }
    if args.smoke:
        job = deep_merge(job, SMOKE)
    config = ExperimentConfig.model_validate(deep_merge(preset_for_env("d4rl") or {}, job))
    experiment = build_experiment(config)
    experiment.start()
    try:
        experiment.learn()
        metrics = experiment.evaluate_test(experiment.make_val_env, args.eval_timesteps)
    finally:
        experiment.close()
    print(json.dumps(metrics, indent=2))
    return metrics


if __name__ == "__main__":
    main()
