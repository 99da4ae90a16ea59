"""AMAGO's ``GymnaxCompatibility``: amago-envs' ``GymnaxVectorEnv`` built from a gymnax env object."""

from __future__ import annotations

from typing import Any

import gymnax

from amago_envs.suites.gymnax.vector_env import GymnaxVectorEnv


class GymnaxCompatibility(GymnaxVectorEnv):
    """AMAGO's ``GymnaxCompatibility(env, num_envs, params, seed)``: ``num_envs`` copies of a gymnax env as one
    numpy-in, numpy-out batch with unbatched spaces, for ``AMAGOEnv(vec_env, env_name, batched_envs=num_envs)`` and
    ``env_mode="already_vectorized"``. Finished rows reset in the same step, as gymnax's auto-reset did.

    Args:
        env: a gymnax environment (``env, params = gymnax.make("Pendulum-v1")``).
        num_envs: rows in the batch.
        params: the env's ``EnvParams`` (None: the env's defaults).
        seed: seed of the first jax key (None: a fresh one).

    Raises:
        ValueError: ``env`` is not one of gymnax's registered environments (amago compiles them by name).
    """

    def __init__(self, env: Any, num_envs: int = 1, params: Any = None, seed: int | None = None) -> None:
        name = getattr(env, "name", None)
        if name not in gymnax.registered_envs or type(gymnax.make(name)[0]) is not type(env):
            msg = (
                f"GymnaxCompatibility: {type(env).__name__} is not a registered gymnax env (amago builds the batch "
                "from gymnax.make(name)); make the env with gymnax.make"
            )
            raise ValueError(msg)
        super().__init__(
            name,
            env.default_params if params is None else params,
            num_envs,
            seed=seed,
            env_name=f"gymnax_{name}",
        )


GymnaxCompatability = GymnaxCompatibility
"""AMAGO's tutorial spells the class this way."""

__all__ = ["GymnaxCompatability", "GymnaxCompatibility"]
