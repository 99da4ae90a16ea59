"""``AlreadyVectorizedPool``: one env that steps a whole batch itself (jax/gymnax, GPU simulators)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from amago_core.rollout.pools.sync import SyncPool
from amago_core.rollout.sequence import SequenceEnv


class AlreadyVectorizedPool(SyncPool):
    """Exactly one env creator whose env has ``batched_envs`` rows and resets finished rows itself.

    Args:
        env_fns: a single creator (a one-element sequence, matching the other pools' signature).
        num_envs: expected number of rows (``parallel_actors``); checked against the env.
    """

    def __init__(self, env_fns: Sequence[Callable[[], SequenceEnv]], num_envs: int | None = None) -> None:
        if len(env_fns) != 1:
            msg = f"already_vectorized takes exactly one env creator (its env holds every row); got {len(env_fns)}."
            raise ValueError(msg)
        super().__init__(env_fns)
        if num_envs is not None and self.num_envs != num_envs:
            msg = (
                f"the already-vectorised env has batched_envs={self.num_envs} but {num_envs} actors were asked for; "
                "make them match."
            )
            raise ValueError(msg)
