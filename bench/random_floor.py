"""The return of a uniformly random policy on an env id: the floor a learning result must clear.

Usage: uv run python bench/random_floor.py popgym-autoencode-easy popgym-higher-lower-easy [--episodes 200]

Steps each env with ``action_space.sample()`` through the env suite amago trains on (the same ``AMAGOEnv``, so
the same rewards and episode ends) and prints, per env id, the mean and spread of the episode return and the
episode lengths (the whole-episode window a learning job needs).
"""

from __future__ import annotations

import argparse
import json
import statistics

import numpy as np

from amago_core.plugins import registries


def random_returns(env_id: str, episodes: int, seed: int) -> tuple[list[float], list[int]]:
    """Returns and lengths of ``episodes`` random-policy episodes of ``env_id``."""
    suite_name, task = registries().resolve_env_id(env_id)
    suite = registries().env_suites.build({"kind": suite_name, "task": task})
    env = suite.make_env("val")
    env.action_space.seed(seed)
    env.reset(seed=seed)
    returns, lengths = [], []
    total, steps = 0.0, 0
    while len(returns) < episodes:
        _, reward, terminated, truncated, _ = env.step(np.asarray(env.action_space.sample()))
        total += float(np.asarray(reward).reshape(-1)[0])
        steps += 1
        if bool(np.asarray(terminated).reshape(-1)[0]) or bool(np.asarray(truncated).reshape(-1)[0]):
            returns.append(total)
            lengths.append(steps)
            total, steps = 0.0, 0
            env.reset()
    return returns, lengths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env_ids", nargs="+")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    floors = {}
    for env_id in args.env_ids:
        returns, lengths = random_returns(env_id, args.episodes, args.seed)
        floors[env_id] = {
            "mean_return": round(statistics.mean(returns), 4),
            "stdev_return": round(statistics.stdev(returns), 4),
            "episodes": len(returns),
            "length_min_max": [min(lengths), max(lengths)],
        }
        print(f"{env_id:40s} {json.dumps(floors[env_id])}", flush=True)


if __name__ == "__main__":
    main()
