"""Collection overhead: env steps/s of the ``sync`` pool vs the raw env in a plain loop, in the same run.

16 Meta-Frozen-Lake envs (5x5, k=10) with a uniformly random policy. "raw" steps the gymnasium envs directly
(reset on done, nothing else); "pool" steps ``SyncPool`` (AMAGOEnv + SequenceEnv: batched timesteps, same-step
resets, returns and metric histories). Optional rows add epsilon-greedy exploration and trajectory recording
(files written to a temp folder at the end, as after a collection phase), and the async pool.

Usage: uv run python bench/collect.py [--steps 2000] [--envs 16] [--repeats 3] [--all]
Target (issue 3): pool overhead under 2x the raw env (raw steps/s / pool steps/s < 2).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from amago_core.rollout.creator import EnvCreator
from amago_core.rollout.env import AMAGOEnv
from amago_core.rollout.pools import make_pool
from amago_envs.exploration.specs import EGREEDY
from amago_envs.suites.frozen_lake import MetaFrozenLake


def make_env(seed: int) -> AMAGOEnv:
    return AMAGOEnv(MetaFrozenLake(size=5, k_episodes=10), env_name="MetaFrozenLake-k10-5x5")


def raw_steps_per_s(n_envs: int, steps: int) -> float:
    envs = [MetaFrozenLake(size=5, k_episodes=10) for _ in range(n_envs)]
    for i, e in enumerate(envs):
        e.reset(seed=i)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(steps):
        actions = rng.integers(0, 5, size=n_envs)
        for e, a in zip(envs, actions, strict=True):
            _, _, terminated, truncated, _ = e.step(int(a))
            if terminated or truncated:
                e.reset()
    return n_envs * steps / (time.perf_counter() - start)


def pool_steps_per_s(
    n_envs: int,
    steps: int,
    mode: str = "sync",
    explore: bool = False,
    save_dir: Path | None = None,
    envs_per_worker: int = 1,
) -> float:
    creators = [
        EnvCreator(
            partial(make_env, i),
            exploration=partial(EGREEDY.build, None) if explore else None,
            save_dir=save_dir,
            seed=i,
        )
        for i in range(n_envs)
    ]
    with make_pool(mode, creators, envs_per_worker=envs_per_worker) as pool:
        pool.reset(seed=0)
        rng = np.random.default_rng(0)
        start = time.perf_counter()
        for _ in range(steps):
            pool.step(rng.integers(0, 5, size=n_envs))
        pool.save_finished_trajs()
        return n_envs * steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="pool steps per measurement")
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3, help="median over this many measurements")
    parser.add_argument("--all", action="store_true", help="also exploration, recording and async rows")
    args = parser.parse_args()

    def median(fn) -> float:
        return statistics.median(fn() for _ in range(args.repeats))

    raw = median(partial(raw_steps_per_s, args.envs, args.steps))
    rows = {"raw env loop": raw, "sync pool": median(partial(pool_steps_per_s, args.envs, args.steps))}
    if args.all:
        rows["sync pool + egreedy"] = median(partial(pool_steps_per_s, args.envs, args.steps, explore=True))
        with tempfile.TemporaryDirectory() as tmp:
            rows["sync pool + egreedy + npz files"] = median(
                partial(pool_steps_per_s, args.envs, args.steps, explore=True, save_dir=Path(tmp))
            )
        rows["async pool, 1 env per worker"] = median(
            partial(pool_steps_per_s, args.envs, args.steps, mode="async")
        )
        per_worker = max(args.envs // 2, 1)
        rows[f"async pool, {per_worker} envs per worker"] = median(
            partial(pool_steps_per_s, args.envs, args.steps, mode="async", envs_per_worker=per_worker)
        )
    print(
        f"{args.envs} x Meta-Frozen-Lake 5x5 k=10, random policy, {args.steps} steps, median of {args.repeats}"
    )
    for name, rate in rows.items():
        print(f"{name:34s} {rate:10,.0f} env steps/s   {raw / rate:5.2f}x raw time per step")
    ratio = raw / rows["sync pool"]
    print(
        f"sync pool overhead: {ratio:.2f}x the raw env ({'meets' if ratio < 2 else 'misses'} the < 2x target)"
    )


if __name__ == "__main__":
    main()
