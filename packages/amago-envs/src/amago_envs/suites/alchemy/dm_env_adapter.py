"""``DmEnvToGymnasium``: a dm_env environment, rebuilt with a new seed at every reset, as a gymnasium env.

Only dm_env's public interface is used (``reset``/``step`` returning ``TimeStep`` with ``step_type``,
``reward``, ``discount``, ``observation``; ``observation_spec``/``action_spec`` built from ``specs.Array``,
``BoundedArray`` and ``DiscreteArray``), so any dm_env environment fits, not only Alchemy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium
import numpy as np


def spec_to_space(spec: Any) -> gymnasium.Space:
    """Converts a dm_env spec (or a dict of them) to a gymnasium space.

    ``DiscreteArray`` becomes ``Discrete``, ``BoundedArray`` a bounded ``Box``, ``Array`` an unbounded ``Box``,
    a mapping a ``Dict``.

    Raises:
        TypeError: the spec is none of those (a nested list, for example).
    """
    if isinstance(spec, Mapping):
        return gymnasium.spaces.Dict({key: spec_to_space(value) for key, value in spec.items()})
    if hasattr(spec, "num_values"):
        return gymnasium.spaces.Discrete(int(spec.num_values))
    if hasattr(spec, "shape") and hasattr(spec, "dtype"):
        dtype = np.dtype(spec.dtype)
        shape = tuple(spec.shape)
        if hasattr(spec, "minimum") and hasattr(spec, "maximum"):
            low = np.broadcast_to(np.asarray(spec.minimum, dtype=dtype), shape)
            high = np.broadcast_to(np.asarray(spec.maximum, dtype=dtype), shape)
            return gymnasium.spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
        big = np.finfo(dtype).max if np.issubdtype(dtype, np.floating) else np.iinfo(dtype).max
        return gymnasium.spaces.Box(low=-big, high=big, shape=shape, dtype=dtype)
    msg = (
        f"cannot convert dm_env spec {spec!r} to a gymnasium space; use Array, BoundedArray or DiscreteArray."
    )
    raise TypeError(msg)


class DmEnvToGymnasium(gymnasium.Env[Any, int]):
    """Builds a fresh dm_env environment with a random seed at every reset and speaks gymnasium.

    A single-entry dict observation is unwrapped to its array (``{"symbolic_obs": x}`` → ``x``).
    ``terminated`` is a last step with discount 0, ``truncated`` a last step with a non-zero discount (dm_env's
    way to mark a time limit). dm_env's ``None`` reward on a first step never reaches the caller.

    Args:
        make_env: builds the dm_env environment from an integer seed.
        env_name: the name to log under.
    """

    def __init__(self, make_env: Callable[[int], Any], env_name: str):
        self._make_env = make_env
        self.env_name = env_name
        probe = make_env(0)
        obs_spec = probe.observation_spec()
        self._unwrap_key = (
            next(iter(obs_spec)) if isinstance(obs_spec, Mapping) and len(obs_spec) == 1 else None
        )
        if self._unwrap_key is not None:
            obs_spec = obs_spec[self._unwrap_key]
        self.observation_space = spec_to_space(obs_spec)
        self.action_space = spec_to_space(probe.action_spec())
        if not isinstance(self.action_space, gymnasium.spaces.Discrete):
            msg = f"{env_name}: expected a DiscreteArray action spec, got {probe.action_spec()!r}."
            raise TypeError(msg)
        probe.close()
        self._env: Any = None

    def _observation(self, observation: Any) -> Any:
        if self._unwrap_key is not None:
            observation = observation[self._unwrap_key]
        if isinstance(observation, Mapping):
            return {key: np.asarray(value) for key, value in observation.items()}
        return np.asarray(observation, dtype=self.observation_space.dtype)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """A new dm_env environment seeded from this env's generator (so ``reset(seed=s)`` is reproducible)."""
        super().reset(seed=seed)
        if self._env is not None:
            self._env.close()
        self._env = self._make_env(int(self.np_random.integers(2**31 - 1)))
        timestep = self._env.reset()
        return self._observation(timestep.observation), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        """One dm_env step; a last step ends the gymnasium episode (call ``reset`` for a new environment)."""
        if self._env is None:
            msg = f"{self.env_name}: step() before reset(); call reset() first."
            raise RuntimeError(msg)
        timestep = self._env.step(int(action))
        reward = 0.0 if timestep.reward is None else float(timestep.reward)
        last = bool(timestep.last())
        discount = 1.0 if timestep.discount is None else float(timestep.discount)
        terminated = last and discount == 0.0
        truncated = last and not terminated
        return self._observation(timestep.observation), reward, terminated, truncated, {}

    def close(self) -> None:
        """Closes the current dm_env environment."""
        if self._env is not None:
            self._env.close()
            self._env = None
