"""Example 14: D4RL-style offline RL from a local minari dataset, then optional online fine-tuning.

The agent trains on the dataset's episodes with the suite's offline preset (AMAGO's example 14: offline loss
only, 5 critics, exp advantage filter, Beta policy, argmax actions, windows padded on the right) and is
evaluated in the dataset's environment. Needs ``pip install "amago-envs[d4rl]"``; the dataset must be local
(``minari download ID`` where there is network access).

Offline only (the default), the episodes are written into the run's protected buffer and sampled uniformly,
as ``amago run --env d4rl`` does. ``--online-after-epoch N`` collects online from epoch N and samples as
AMAGO's example 14 does: the episodes go into a folder of their own (``{buffer root}/{run}/offline``) that never
takes new trajectories, the collectors write to the run's buffer (``replay.dset_max_size`` files, trained on
once it holds 250), and each training sequence comes from the episodes with weight 0.8 and from the online
files with weight 0.2, that 0.2 ramping up from 0 over the 50 epochs after the online buffer first holds
its 250.

    python examples/14_d4rl.py --dataset mujoco/halfcheetah/medium-v0 --run-name hc-medium
    python examples/14_d4rl.py --dataset mujoco/halfcheetah/medium-v0 --online-after-epoch 100
    python examples/14_d4rl.py --smoke   # a tiny random-policy Pendulum dataset, online from epoch 1 (see SMOKE)
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from _launch import TINY_TRANSFORMER, add_common_flags, launch

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.sources import deep_merge
from amago_core.data.disk_buffer import DiskTrajDataset
from amago_core.data.mixture import MixtureOfDatasets
from amago_envs.suites.d4rl.convert import convert_dataset
from amago_envs.suites.d4rl.specs import NEVER_COLLECT

SMOKE_DATASET = "amagosmoke/pendulum-random-v0"
SMOKE = deep_merge(TINY_TRANSFORMER, {"run": {"max_seq_len": 8}, "schedule": {"epochs": 2}})

OFFLINE_FOLDER = "offline"
"""Where an online run keeps the converted episodes: ``{buffer root}/{buffer name}/offline/buffer/protected``."""

SAMPLING_WEIGHTS = (0.8, 0.2)
"""AMAGO's example 14: (converted episodes, online files)."""

ONLINE_MIN_FILES = 250
"""Online files the run's buffer holds before they are sampled (AMAGO's example 14)."""

ONLINE_RAMP_EPOCHS = 50
"""Epochs over which the online weight ramps from 0 to 0.2, from the epoch the run's buffer first holds
``ONLINE_MIN_FILES`` (AMAGO's ``smooth_sudden_starts``)."""

SMOKE_ONLINE_MIN_FILES = 2
"""``--smoke``: its one collecting epoch gives one 20-step episode per actor (2 actors), so 250 would never be
reached and the online part would go untested."""

SMOKE_ONLINE_RAMP_EPOCHS = 1
"""``--smoke``: the online files get their full 0.2 in the one epoch that trains on them."""


class ConvertedEpisodes(DiskTrajDataset):
    """The converted episodes alone, sampled uniformly (AMAGO's ``D4RLDataset``); they never take new
    trajectories, so a mixture sends the collectors' files to its other part."""

    @property
    def save_new_trajs_to(self) -> None:
        """None: the converted dataset takes no new trajectories."""
        return None


def run_buffer(config: ExperimentConfig) -> tuple[Path, str]:
    """``(root, name)`` of the run's replay buffer, ``{root}/{name}/buffer`` (in the run folder by default)."""
    replay, run = config.replay, config.run
    root = replay.dset_root if replay.dset_root is not None else run.ckpt_base_dir
    return Path(root), replay.dset_name or str(run.name)


def offline_online_mixture(
    config: ExperimentConfig,
    *,
    online_min_files: int = ONLINE_MIN_FILES,
    ramp_epochs: int = ONLINE_RAMP_EPOCHS,
) -> MixtureOfDatasets:
    """AMAGO's example-14 dataset: the converted episodes 0.8, the run's online buffer 0.2 (ramped up).

    Args:
        config: the run's final config. The converted episodes are read from ``OFFLINE_FOLDER`` inside its
            replay buffer's folder (``run_buffer``); the online part is that replay buffer
            (``replay.dset_max_size`` files). The mixture is seeded from ``run.seed``, and both parts draw
            from its generator. The online part starts at weight 0 (it is empty when the mixture is configured)
            and ramps up to 0.2, as AMAGO's mixture does.
        online_min_files: online files needed before they are sampled.
        ramp_epochs: epochs over which the online weight ramps from 0 to its final 0.2.
    """
    replay, seed = config.replay, config.run.seed
    root, name = run_buffer(config)
    # Its FIFO never gets a file (no collector writes there); 1 is the smallest capacity a buffer takes.
    offline = ConvertedEpisodes(root / name, OFFLINE_FOLDER, dset_max_size=1)
    online = DiskTrajDataset(
        dset_root=root,
        dset_name=name,
        dset_max_size=replay.dset_max_size,
        dset_min_size=online_min_files,
        # .traj files are pickles: read only when this run writes that format itself (as the default buffer).
        allow_pickle_files=replay.save_trajs_as == "traj",
    )
    return MixtureOfDatasets(
        [offline, online],
        sampling_weights=SAMPLING_WEIGHTS,
        smooth_sudden_starts=ramp_epochs,
        seed=seed,
    )


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
    online = args.online_after_epoch is not None
    job: dict[str, Any] = {
        "env": {"id": "d4rl", "dataset": args.dataset},
        "run": {"max_seq_len": args.max_seq_len},
        "schedule": {
            "start_collecting_at_epoch": args.online_after_epoch if online else NEVER_COLLECT,
            "train_timesteps_per_epoch": args.eval_timesteps,
            "val_timesteps_per_epoch": args.eval_timesteps,
        },
    }

    def prepare_data(config: ExperimentConfig) -> dict[str, Any] | None:
        """Converts the episodes; an online run gets the mixture, an offline one trains on its own buffer."""
        root, name = run_buffer(config)
        # Offline only, the episodes are the run's protected buffer (what `amago run --env d4rl` trains on).
        if online:
            root, name = root / name, OFFLINE_FOLDER
        files = convert_dataset(args.dataset, root, name)
        print(
            f"converted {len(files)} episodes of {args.dataset} into {root / name / 'buffer' / 'protected'}"
        )
        if not online:
            return None
        dataset = offline_online_mixture(
            config,
            online_min_files=SMOKE_ONLINE_MIN_FILES if args.smoke else ONLINE_MIN_FILES,
            ramp_epochs=SMOKE_ONLINE_RAMP_EPOCHS if args.smoke else ONLINE_RAMP_EPOCHS,
        )
        return {"dataset": dataset}

    return launch(
        job,
        args,
        smoke_job=SMOKE,
        eval_timesteps=args.eval_timesteps,
        name="14",
        before_build=prepare_data,
    )


if __name__ == "__main__":
    main()
