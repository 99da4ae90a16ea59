"""AMAGO's ``XLandMinigridVectorizedGym``: amago-envs' ``XLandVectorEnv`` with AMAGO's constructor."""

from __future__ import annotations

import gymnasium
import numpy as np
import xminigrid

from amago_envs.suites.xland.rulesets import load_benchmark_rulesets
from amago_envs.suites.xland.vector_env import XLandVectorEnv


class XLandMinigridVectorizedGym(XLandVectorEnv):
    """AMAGO's ``XLandMinigridVectorizedGym(parallel_envs, k_episodes, rooms, grid_size, ruleset_benchmark,
    train_test_split, train_test_split_key, train_test_split_pct)``: ``parallel_envs`` XLand-MiniGrid rows stepped
    as one batch (``AMAGOEnv(..., batched_envs=parallel_envs)``, ``env_mode="already_vectorized"``); each plays
    ``k_episodes`` episodes on a ruleset of the benchmark, then draws another (``Ep {n} Return`` is logged).

    Args:
        parallel_envs: rows in the batch.
        k_episodes: episodes per ruleset.
        rooms: rooms of the layout.
        grid_size: side of the grid.
        ruleset_benchmark: an xminigrid benchmark (``small-1m``...), read from xminigrid's data folder.
        train_test_split: ``train`` or ``test``: which part of the benchmark rows draw from.
        train_test_split_key: seed of the shuffle before the split.
        train_test_split_pct: share of the benchmark in the train part.
        k_shots: the same as ``k_episodes`` (AMAGO's example 11 passes this older name).

    Raises:
        ValueError: an unknown split or layout; ``BenchmarkUnavailableError`` (a ValueError) when the benchmark
            file is not on disk (the message says how to fetch it).
    """

    def __init__(
        self,
        parallel_envs: int,
        k_episodes: int = 25,
        rooms: int = 4,
        grid_size: int = 13,
        ruleset_benchmark: str = "small-1m",
        train_test_split: str = "train",
        train_test_split_key: int = 0,
        train_test_split_pct: float = 0.8,
        *,
        k_shots: int | None = None,
    ) -> None:
        if train_test_split not in ("train", "test"):
            msg = f"train_test_split must be 'train' or 'test', got {train_test_split!r}"
            raise ValueError(msg)
        env_id = f"XLand-MiniGrid-R{rooms}-{grid_size}x{grid_size}"
        if env_id not in xminigrid.registered_environments():
            msg = f"xminigrid has no layout {env_id!r} (rooms={rooms}, grid_size={grid_size})"
            raise ValueError(msg)
        self.rooms = rooms
        self.grid_size = grid_size
        self.ruleset_benchmark = ruleset_benchmark
        self.parallel_envs = parallel_envs
        train, test = load_benchmark_rulesets(ruleset_benchmark).split(
            train_test_split_pct, seed=train_test_split_key
        )
        _, params = xminigrid.make(env_id)
        self.max_steps_per_episode = int(params.max_steps)
        super().__init__(
            env_id,
            train if train_test_split == "train" else test,
            num_envs=parallel_envs,
            k_episodes=k_episodes if k_shots is None else k_shots,
            env_name=f"XLandMiniGrid-{ruleset_benchmark}-R{rooms}-{grid_size}x{grid_size}",
            pool_capacity=max(len(train), len(test)),
        )
        # AMAGO's bounds: tile, colour and goal ids up to 14 (scripts size token embeddings from them).
        spaces = dict(self.single_observation_space.spaces)
        for key in ("grid", "goal"):
            spaces[key] = gymnasium.spaces.Box(0, 14, spaces[key].shape, np.uint8)
        self.single_observation_space = self.observation_space = gymnasium.spaces.Dict(spaces)

    @property
    def suggested_max_seq_len(self) -> int:
        """``(max_steps + 1) * k_episodes``: the longest rollout on one ruleset."""
        return (self.max_steps_per_episode + 1) * self.k_episodes


__all__ = ["XLandMinigridVectorizedGym"]
