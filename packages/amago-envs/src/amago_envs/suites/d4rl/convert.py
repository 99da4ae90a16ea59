"""Writes a local minari dataset's episodes into a run's protected buffer, as AMAGO trajectory files.

``python -m amago_envs.suites.d4rl.convert DATASET_ID --ckpt-base-dir runs --run-name NAME`` fills
``runs/NAME/buffer/protected/`` (the disk buffer ``amago run --name NAME`` samples and never deletes), one
``.npz`` per episode. Observations, actions and rewards are stored as ``AMAGOEnv`` would have recorded them
online: non-dict observations under ``observation``, Box actions rescaled to the policy's [-1, 1], Discrete
actions one-hot; ``dones`` are minari's terminations (time-limit truncations are not terminal).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from amago_core.data.files import SAVE_FORMATS, save_traj, traj_file_stem
from amago_core.data.trajectory import FrozenTraj
from amago_core.rollout.env import DEFAULT_OBS_KEY
from amago_envs.suites.d4rl.datasets import dataset_env_name, load_local_dataset


def _obs_arrays(observations: Any, space: Any) -> dict[str, np.ndarray]:
    import gymnasium

    if isinstance(space, gymnasium.spaces.Dict):
        out = {}
        for key, sub in space.spaces.items():
            if isinstance(sub, gymnasium.spaces.Dict):
                msg = f"observation key {key!r} is a nested Dict; AMAGOEnv needs a flat Dict of arrays."
                raise ValueError(msg)
            out[key] = np.asarray(observations[key], dtype=sub.dtype)
        return out
    return {DEFAULT_OBS_KEY: np.asarray(observations, dtype=space.dtype)}


def policy_actions(actions: np.ndarray, space: Any) -> np.ndarray:
    """Dataset actions in the representation ``AMAGOEnv`` stores: ``(T, A)`` float32.

    Box actions are mapped from ``[low, high]`` to ``[-1, 1]``, Discrete ones become one-hot rows,
    MultiBinary ones are kept.

    Raises:
        ValueError: an action space ``AMAGOEnv`` does not support, or Box bounds that are not finite.
    """
    import gymnasium

    actions = np.asarray(actions)
    if isinstance(space, gymnasium.spaces.Box):
        if not (np.isfinite(space.low).all() and np.isfinite(space.high).all()):
            msg = "Box actions need finite bounds to be rescaled to [-1, 1]; this dataset's action space has none."
            raise ValueError(msg)
        low, high = space.low.astype(np.float64), space.high.astype(np.float64)
        scaled = 2.0 * (actions.reshape(len(actions), -1) - low) / (high - low) - 1.0
        return np.clip(scaled, -1.0, 1.0).astype(np.float32)
    if isinstance(space, gymnasium.spaces.Discrete):
        index = actions.reshape(-1).astype(np.int64) - int(space.start)
        return np.eye(int(space.n), dtype=np.float32)[index]
    if isinstance(space, gymnasium.spaces.MultiBinary):
        return actions.reshape(len(actions), -1).astype(np.float32)
    msg = f"AMAGOEnv supports Box, Discrete and MultiBinary actions; this dataset has {type(space).__name__}."
    raise ValueError(msg)


def episode_to_traj(episode: Any, observation_space: Any, action_space: Any) -> FrozenTraj:
    """One minari ``EpisodeData`` as AMAGO trajectory arrays (T transitions, T + 1 observations)."""
    actions = policy_actions(episode.actions, action_space)
    rewards = np.asarray(episode.rewards, dtype=np.float32).reshape(-1, 1)
    n = len(actions)
    rl2s = np.zeros((n + 1, 1 + actions.shape[1]), dtype=np.float32)
    # rl2s[t] is what the agent saw arriving at step t: the previous reward and action (zeros at the start).
    rl2s[1:, :1] = rewards
    rl2s[1:, 1:] = actions
    traj = FrozenTraj(
        obs=_obs_arrays(episode.observations, observation_space),
        rl2s=rl2s,
        time_idxs=np.arange(n + 1, dtype=np.int64).reshape(-1, 1),
        rews=rewards,
        dones=np.asarray(episode.terminations, dtype=bool).reshape(-1, 1),
        actions=actions,
    )
    traj.check()
    return traj


def convert_dataset(
    dataset_id: str,
    dset_root: str | Path,
    dset_name: str,
    *,
    save_as: str = "npz",
    max_episodes: int | None = None,
) -> list[Path]:
    """Writes the episodes of a local minari dataset into ``dset_root/dset_name/buffer/protected``.

    With ``dset_root`` = the run's ``ckpt_base_dir`` and ``dset_name`` = its run name, this is the buffer an
    ``amago run`` of that name trains on.

    Args:
        dataset_id: a locally available minari dataset.
        dset_root: the buffer root (``run.ckpt_base_dir`` unless ``replay.dset_root`` is set).
        dset_name: the buffer name (the run name unless ``replay.dset_name`` is set).
        save_as: ``npz`` or ``npz-compressed``.
        max_episodes: convert only the first N episodes (None: all).

    Returns:
        The written files, in episode order.

    Raises:
        amago_envs.suites.d4rl.datasets.DatasetNotFoundError: the dataset is not available locally.
        ValueError: an unsupported save format or space.
    """
    if save_as not in ("npz", "npz-compressed"):
        msg = f"save_as must be 'npz' or 'npz-compressed' for converted datasets; got {save_as!r}."
        raise ValueError(msg)
    dataset = load_local_dataset(dataset_id)
    protected = Path(dset_root) / dset_name / "buffer" / "protected"
    protected.mkdir(parents=True, exist_ok=True)
    env_name = dataset_env_name(dataset_id)
    written = []
    for i, episode in enumerate(dataset.iterate_episodes()):
        if max_episodes is not None and i >= max_episodes:
            break
        traj = episode_to_traj(episode, dataset.observation_space, dataset.action_space)
        written.append(save_traj(traj, protected, traj_file_stem(env_name), save_as))  # type: ignore[arg-type]
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m amago_envs.suites.d4rl.convert``: see the module docstring."""
    parser = argparse.ArgumentParser(
        prog="python -m amago_envs.suites.d4rl.convert",
        description="Write a local minari dataset into a run's protected buffer (AMAGO trajectory files).",
    )
    parser.add_argument("dataset_id", help="a minari dataset available locally (MINARI_DATASETS_PATH)")
    parser.add_argument("--ckpt-base-dir", default="runs", help="the run's run.ckpt_base_dir (default: runs)")
    parser.add_argument("--run-name", required=True, help="the run name you will pass to `amago run --name`")
    parser.add_argument("--save-as", default="npz", choices=[f for f in SAVE_FORMATS if f != "traj"])
    parser.add_argument("--max-episodes", type=int, default=None, help="convert only the first N episodes")
    args = parser.parse_args(argv)
    from amago_envs.suites.d4rl.datasets import DatasetNotFoundError

    try:
        files = convert_dataset(
            args.dataset_id,
            args.ckpt_base_dir,
            args.run_name,
            save_as=args.save_as,
            max_episodes=args.max_episodes,
        )
    except (DatasetNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    folder = Path(args.ckpt_base_dir) / args.run_name / "buffer" / "protected"
    print(f"wrote {len(files)} episodes of {args.dataset_id} to {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
