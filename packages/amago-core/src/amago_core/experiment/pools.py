"""The env pools of one process: each with its role (train / val / test) and its own seed stream.

A pool is seeded on its first reset only, so later evaluations continue its random stream and see new tasks
(lakes, mazes, goal sides) instead of replaying the first evaluation's. The train, val and test pools of a
process, and the pools of different processes, draw from separate streams: seeded alike, a val env would
replay its train twin's tasks and evaluation would score tasks the agent trained on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from amago_core.config.experiment import ExperimentConfig
from amago_core.data.timestep import Timestep
from amago_core.rollout import EnvCreator, EnvSuite, StepResult, VectorPool, make_pool

Role = Literal["train", "val", "test"]
ROLES: tuple[Role, ...] = ("train", "val", "test")
NEVER_SPLIT = 10**9
"""``traj_save_len`` values at or above this save whole episodes (AMAGO's default is 1e10)."""

EnvMakers = Callable[[], Any] | Sequence[Callable[[], Any]]
"""What the Python API takes for an env: one maker (repeated per actor) or one maker per actor."""


def makers_per_actor(make_env: EnvMakers, n: int, what: str) -> list[Callable[[], Any]]:
    """``make_env`` as ``n`` makers.

    Raises:
        ValueError: a list whose length is not ``n``.
    """
    if callable(make_env):
        return [make_env] * n
    makers = list(make_env)
    if len(makers) != n:
        msg = f"{what} is a list of {len(makers)} env makers but parallel_actors is {n}; give one per actor."
        raise ValueError(msg)
    return makers


def _make_suite_env(suite: EnvSuite, split: Role) -> Any:
    # A module-level function over a picklable suite object, so `async` pools can ship it to their workers.
    return suite.make_env(split)


def suite_makers(suite: EnvSuite) -> dict[Role, Callable[[], Any]]:
    """One picklable env maker per role from an env suite."""
    return {role: functools.partial(_make_suite_env, suite, role) for role in ROLES}


def first_reset_seed(seed: int | None, process: int, role: Role) -> int | None:
    """The seed of a pool's first reset (row i gets ``seed + i``); None when the run is not seeded."""
    if seed is None:
        return None
    if role == "train":
        return seed + 7919 * process
    stream = np.random.SeedSequence([seed, process, ROLES.index(role)])
    return int(stream.generate_state(1)[0] % 2**31)


def creator_seed(seed: int | None, process: int, role: Role, actor: int) -> int | None:
    """The seed of one actor's snippet lengths and exploration noise."""
    if seed is None:
        return None
    return seed * 10_000 + process * 1_000 + actor + (0 if role == "train" else 500)


class RolePool(VectorPool):
    """A vector pool that knows its role and seeds its own first reset.

    Args:
        pool: the pool stepping the envs.
        role: ``train``, ``val`` or ``test``.
        first_seed: the seed of its first reset (None: unseeded).
    """

    def __init__(self, pool: VectorPool, role: Role, first_seed: int | None):
        self.pool = pool
        self.role = role
        self.first_seed = first_seed
        self.num_envs = pool.num_envs
        self.seeded = False

    def reset(self, seed: int | None = None) -> Timestep:
        """Resets every row: with ``seed`` if given, else the first reset uses the pool's own seed."""
        if seed is None and not self.seeded:
            seed = self.first_seed
        self.seeded = True
        return self.pool.reset(seed=seed)

    def step(self, actions: Any) -> StepResult:
        return self.pool.step(actions)

    def stats(self) -> dict[str, Any]:
        return self.pool.stats()

    def reset_stats(self) -> None:
        self.pool.reset_stats()

    def save_finished_trajs(self) -> list[Path]:
        return self.pool.save_finished_trajs()

    def close(self) -> None:
        self.pool.close()

    def __getattr__(self, name: str) -> Any:
        # Anything else a concrete pool offers (``render``...) is the inner pool's.
        return getattr(self.__dict__["pool"], name)


def build_pool(
    config: ExperimentConfig,
    makers: Sequence[Callable[[], Any]],
    *,
    role: Role,
    process: int,
    save_dir: Path | None = None,
    exploration: Callable[..., Any] | None = None,
) -> RolePool:
    """An env pool for ``role``: one ``EnvCreator`` per maker, the rollout settings, the role's seeds.

    Args:
        config: the run's config (rollout mode, trajectory files, seed).
        makers: one env maker per actor (exactly one for ``already_vectorized``).
        role: which pool this is; only ``train`` explores.
        process: this process's index (processes draw apart).
        save_dir: where finished trajectories go (None: not saved).
        exploration: the exploration wrapper's builder (``train`` only).
    """
    rollout, replay, seed = config.rollout, config.replay, config.run.seed
    max_seq_len = config.run.max_seq_len
    splits = replay.traj_save_len < NEVER_SPLIT
    creators = [
        EnvCreator(
            make_env=make,
            exploration=exploration if role == "train" else None,
            save_dir=save_dir,
            save_as=replay.save_trajs_as,
            traj_save_len=replay.traj_save_len if splits else None,
            # AMAGO staggers only snippets longer than a training window; whole-window files stay whole.
            stagger=max_seq_len
            if replay.stagger_traj_file_lengths and splits and max_seq_len < replay.traj_save_len
            else 0,
            seed=creator_seed(seed, process, role, i),
        )
        for i, make in enumerate(makers)
    ]
    pool = make_pool(
        rollout.env_mode,
        creators,
        start_method=rollout.async_env_mp_context,
        num_envs=rollout.parallel_actors,
    )
    return RolePool(pool, role, first_reset_seed(seed, process, role))
