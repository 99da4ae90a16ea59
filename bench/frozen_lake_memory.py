"""Does a Meta-Frozen-Lake policy remember the holes it fell into? Rolls out a run's policy and prints two figures.

Usage:
    uv run python bench/frozen_lake_memory.py bench/out/frozen-lake/<run> [--episodes 240] [--argmax]

- success by attempt (0..k-1) on fresh lakes: in-context learning shows as later attempts beating attempt 0;
- the repeat rate: among steps taken on a tile from which an earlier attempt of the same lake fell into a hole,
  how often the agent takes that same fatal action again. A policy without memory that acts by argmax repeats
  it every time. It is a partial view: the GRU job's policy that gains +0.27 success from attempt 0 to the
  late attempts still repeats about half the time (it mostly improves by taking other routes), as did
  policies whose success stayed flat.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np
from learn import success_by_attempt  # bench/ is on sys.path when a bench script runs

from amago import Experiment
from amago_core.config.sources import load_config
from amago_core.data.files import load_traj


def repeat_rate(trajectory_files: list[Path], lake_size: int) -> tuple[int, int]:
    """(steps on a tile with a known fatal action, of which that action was taken again) over the files."""
    chances = repeats = 0
    for path in trajectory_files:
        traj = load_traj(path)
        obs = traj.obs["observation"]
        actions = np.asarray(traj.actions).argmax(-1)
        rewards = np.asarray(traj.rews)[:, 0]
        tiles = [tuple(t) for t in np.rint(obs[:, :2] * lake_size).astype(int)]
        soft_reset = obs[:, 2] > 0.5
        fatal: set[tuple[tuple[int, int], int]] = set()
        for t, action in enumerate(actions):
            move = (tiles[t], int(action))
            if any(tile == tiles[t] for tile, _ in fatal):
                chances += 1
                repeats += move in fatal
            # An attempt that ends without reward ended in a hole (or, rarely, at its step limit).
            if soft_reset[t + 1] and rewards[t] <= 0:
                fatal.add(move)
    return chances, repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "run_dir", type=Path, help="a run folder with config.resolved.json and latest weights"
    )
    parser.add_argument("--episodes", type=int, default=240, help="meta-episodes to roll out")
    parser.add_argument("--argmax", action="store_true", help="act by argmax instead of sampling")
    args = parser.parse_args()
    run = args.run_dir.resolve()
    if not (run / "config.resolved.json").is_file():
        parser.error(
            f"{run} has no config.resolved.json; pass a run folder made by bench/learn.py or amago run"
        )
    config = load_config(
        files=[run / "config.resolved.json"],
        flags={"run": {"name": run.name, "ckpt_base_dir": str(run.parent)}, "logging": {"verbose": False}},
        environ={},
    )
    experiment = Experiment(config, evaluation_only=True, sample_actions=not args.argmax)
    experiment.start()
    out = Path(tempfile.mkdtemp(prefix="frozen-lake-memory-"))
    try:
        experiment.load_checkpoint_from_path(experiment.paths.latest_policy, is_accelerate_state=False)
        steps = 4 * experiment.max_seq_len * max(1, args.episodes // experiment.parallel_actors)
        metrics = experiment.evaluate_test(
            experiment.make_val_env, steps, save_trajs_to=out, episodes=args.episodes
        )
        success = success_by_attempt(metrics)
        chances, repeats = repeat_rate(sorted(out.rglob("*.npz")), lake_size=config.env.size)
    finally:
        experiment.close()
        shutil.rmtree(out, ignore_errors=True)
    print("success by attempt:", " ".join(f"{rate:.2f}" for rate in success))
    print(f"fatal action repeated on {repeats} of {chances} chances ({repeats / max(chances, 1):.2f})")


if __name__ == "__main__":
    main()
