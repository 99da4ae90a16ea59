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
import os
import tempfile
from typing import Any

from _launch import TINY_TRANSFORMER, add_common_flags, launch

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.sources import deep_merge
from amago_envs.suites.d4rl.convert import convert_dataset
from amago_envs.suites.d4rl.specs import NEVER_COLLECT

SMOKE_DATASET = "amagosmoke/pendulum-random-v0"
SMOKE = deep_merge(TINY_TRANSFORMER, {"run": {"max_seq_len": 8}, "schedule": {"epochs": 2}})


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
    add_common_flags(
        parser, epochs=500, run_name="d4rl", smoke_help="a tiny dataset and job in temp folders (seconds)"
    )
    args = parser.parse_args(argv)
    if args.smoke:  # the run folder is launch's temporary one
        args.dataset, args.online_after_epoch, args.eval_timesteps = make_smoke_dataset(), 1, 21
    if not args.dataset:
        parser.error("--dataset is required (a local minari dataset id); or pass --smoke")
    job: dict[str, Any] = {
        "env": {"id": "d4rl", "dataset": args.dataset},
        "run": {"max_seq_len": args.max_seq_len},
        "schedule": {
            "start_collecting_at_epoch": NEVER_COLLECT
            if args.online_after_epoch is None
            else args.online_after_epoch,
            "train_timesteps_per_epoch": args.eval_timesteps,
            "val_timesteps_per_epoch": args.eval_timesteps,
        },
    }

    def convert(config: ExperimentConfig) -> None:
        """Writes the dataset's episodes into the run's protected buffer (the final run folder)."""
        files = convert_dataset(args.dataset, config.run.ckpt_base_dir, args.run_name)
        print(f"converted {len(files)} episodes of {args.dataset} into the protected buffer")

    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=args.eval_timesteps,
        name="14",
        before_build=convert,
    )


if __name__ == "__main__":
    main()
