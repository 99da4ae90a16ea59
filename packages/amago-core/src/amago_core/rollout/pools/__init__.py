"""Vector pools: ``sync`` (in-process, default), ``async`` (one process per env), ``already_vectorized``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from amago_core.rollout.pools.already_vectorized import AlreadyVectorizedPool
from amago_core.rollout.pools.async_pool import AsyncPool, EnvWorkerError, StartMethod
from amago_core.rollout.pools.base import EnvCallError, VectorPool
from amago_core.rollout.pools.sync import SyncPool
from amago_core.rollout.sequence import SequenceEnv, StepResult

EnvMode = Literal["sync", "async", "already_vectorized"]
ENV_MODES: tuple[str, ...] = ("sync", "async", "already_vectorized")


def make_pool(
    env_mode: EnvMode,
    env_fns: Sequence[Callable[[], SequenceEnv]],
    *,
    start_method: StartMethod = "forkserver",
    num_envs: int | None = None,
    stack: bool = True,
    envs_per_worker: int = 1,
) -> VectorPool:
    """Builds the pool for ``env_mode``.

    Args:
        env_mode: ``sync``, ``async`` or ``already_vectorized``.
        env_fns: env creators (exactly one for ``already_vectorized``).
        start_method: process start method of the ``async`` pool.
        num_envs: expected total rows (checked by ``already_vectorized``).
        stack: let the ``sync`` pool stack compatible envs into one batch (faster, same results).
        envs_per_worker: envs sharing one ``async`` worker process.
    """
    if env_mode == "sync":
        return SyncPool(env_fns, stack=stack)
    if env_mode == "async":
        return AsyncPool(env_fns, start_method=start_method, envs_per_worker=envs_per_worker)
    if env_mode == "already_vectorized":
        return AlreadyVectorizedPool(env_fns, num_envs=num_envs)
    msg = f"unknown env_mode {env_mode!r}; choose one of {ENV_MODES}."
    raise ValueError(msg)


__all__ = [
    "ENV_MODES",
    "AlreadyVectorizedPool",
    "AsyncPool",
    "EnvCallError",
    "EnvMode",
    "EnvWorkerError",
    "StepResult",
    "SyncPool",
    "VectorPool",
    "make_pool",
]
