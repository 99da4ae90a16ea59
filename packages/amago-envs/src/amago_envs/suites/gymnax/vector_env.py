"""``GymnaxVectorEnv``: a batch of one gymnax environment as a numpy-in, numpy-out gymnasium env."""

from __future__ import annotations

import functools
import os
from typing import Any

# jax reads this when its backend starts; on a GPU it would otherwise reserve most of the memory torch needs.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import gymnasium
import jax
import numpy as np
from gymnax.environments import spaces as gymnax_spaces


def to_gymnasium_space(space: Any) -> gymnasium.Space:
    """Converts a gymnax ``Discrete``/``Box`` space to gymnasium (numpy bounds, numpy dtype).

    Raises:
        TypeError: the space is a gymnax ``Dict``/``Tuple``, which AMAGOEnv cannot take as a whole.
    """
    if isinstance(space, gymnax_spaces.Discrete):
        return gymnasium.spaces.Discrete(int(space.n))
    if isinstance(space, gymnax_spaces.Box):
        dtype = np.dtype(space.dtype)
        shape = tuple(int(d) for d in space.shape)
        low = np.broadcast_to(np.asarray(space.low), shape).astype(dtype)
        high = np.broadcast_to(np.asarray(space.high), shape).astype(dtype)
        return gymnasium.spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
    msg = f"gymnax space {type(space).__name__} is not supported; pick a task with a Discrete or Box space."
    raise TypeError(msg)


@functools.lru_cache(maxsize=16)
def compiled_functions(task: str, params: Any) -> tuple[Any, Any, Any]:
    """The jit-compiled batch ``reset``, ``step`` and key split of one gymnax task and its params.

    Cached so that an experiment's train, val and sample envs share the traced programs (jax keys its cache
    on the function object, and every ``gymnax.make`` returns new bound methods).
    """
    import gymnax

    env, _ = gymnax.make(task)
    # Jit of vmap: one XLA program for the whole batch (params are shared, not mapped).
    reset_fn = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    step_fn = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    split_fn = jax.jit(jax.vmap(jax.random.split, out_axes=1))
    return reset_fn, step_fn, split_fn


class GymnaxVectorEnv(gymnasium.Env[np.ndarray, np.ndarray]):
    """``num_envs`` copies of a gymnax env, reset and stepped by one jit-compiled, vmapped jax call.

    gymnax's ``step`` resets a finished row inside the same call and returns the new episode's first
    observation, which is exactly the SAME_STEP contract ``AMAGOEnv(batched_envs=N)`` expects; the finished
    episode's last observation is not kept (gymnax discards it), so no ``final_obs`` is reported.

    ``single_observation_space``/``single_action_space`` describe one row; ``observation_space`` and
    ``action_space`` are the same unbatched spaces (AMAGOEnv reads the ``single_`` ones).

    Args:
        task: the gymnax registry name (``gymnax.make(task)``).
        params: the task's ``EnvParams``.
        num_envs: rows in the batch.
        seed: seed of the first jax key; None draws one from numpy's entropy.
        env_name: the name to log under.
    """

    metadata: dict[str, Any] = {"render_modes": [], "autoreset_mode": "SameStep"}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self, task: str, params: Any, num_envs: int, seed: int | None = None, env_name: str = "gymnax"
    ):
        if num_envs < 1:
            msg = f"num_envs must be at least 1, got {num_envs}."
            raise ValueError(msg)
        import gymnax

        env, _ = gymnax.make(task)
        self._params = params
        self.num_envs = int(num_envs)
        self.env_name = env_name
        self.single_observation_space = to_gymnasium_space(env.observation_space(params))
        self.single_action_space = to_gymnasium_space(env.action_space(params))
        self.observation_space = self.single_observation_space
        self.action_space = self.single_action_space
        self._obs_dtype = self.single_observation_space.dtype
        self._act_dtype = (
            np.int32 if isinstance(self.single_action_space, gymnasium.spaces.Discrete) else np.float32
        )
        self._reset_fn, self._step_fn, self._split_fn = compiled_functions(task, params)
        self._key = self._new_keys(seed)
        self._state: Any = None

    def _new_keys(self, seed: int | None) -> jax.Array:
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31 - 1))
        return jax.random.split(jax.random.key(seed), self.num_envs)

    def _next_keys(self) -> jax.Array:
        self._key, sub = self._split_fn(self._key)
        return sub

    def _to_numpy_obs(self, obs: jax.Array) -> np.ndarray:
        # MinAtar returns booleans for a float Box; cast so the batch matches the declared space.
        return np.asarray(obs).astype(self._obs_dtype, copy=False)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every row (a new key stream when ``seed`` is given); returns ``(obs, {})``."""
        if seed is not None:
            self._key = self._new_keys(seed)
        obs, self._state = self._reset_fn(self._next_keys(), self._params)
        return self._to_numpy_obs(obs), {}

    # A batched env: rewards and done flags are (num_envs,) arrays, as AMAGOEnv(batched_envs=N) expects,
    # where gymnasium.Env.step declares one scalar reward and bool flags.
    def step(  # type: ignore[override]
        self, action: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every row; finished rows come back already reset (their obs is the new episode's first).

        gymnax reports a single ``done``; a row that was done on its episode's last allowed step is reported
        as truncated, any other done row as terminated (so time-outs are not taught as terminal states).
        """
        if self._state is None:
            msg = "GymnaxVectorEnv.step() before reset(); call reset() first."
            raise RuntimeError(msg)
        action = np.asarray(action, dtype=self._act_dtype)
        if action.shape[0] != self.num_envs:
            msg = f"expected a batch of {self.num_envs} actions, got shape {action.shape}."
            raise ValueError(msg)
        time_before = np.asarray(self._state.time) if hasattr(self._state, "time") else None
        obs, self._state, reward, done, _ = self._step_fn(
            self._next_keys(), self._state, action, self._params
        )
        done = np.asarray(done, dtype=bool)
        truncated = np.zeros_like(done)
        max_steps = getattr(self._params, "max_steps_in_episode", None)
        if time_before is not None and max_steps is not None:
            truncated = done & (time_before + 1 >= int(max_steps))
        terminated = done & ~truncated
        return self._to_numpy_obs(obs), np.asarray(reward, dtype=np.float32), terminated, truncated, {}
