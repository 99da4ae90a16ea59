"""``GymSuite``: makes any registered gymnasium id, importing the library that registers its namespace."""

from __future__ import annotations

import difflib
import importlib
from typing import Any

import gymnasium
import numpy as np

from amago_core.plugins.errors import MissingRequirementError
from amago_envs.suites.gym_ids.specs import GYM_DEFAULT_TASK, GymConfig
from amago_envs.suites.suite import BuiltinSuite

NAMESPACE_MODULES: dict[str, tuple[str, str]] = {
    "dm_control": ("shimmy", 'pip install "amago-envs[gym]"'),
    "ALE": ("ale_py", 'pip install "amago-envs[ale]"'),
}
"""gymnasium namespaces whose ids exist only once a library is imported: namespace -> (module, install)."""


def fold_gym_id(env_id: str) -> str:
    """The path-safe spelling of a gymnasium id: ``/`` and ``_`` as ``-``, lower case."""
    return env_id.replace("/", "-").replace("_", "-").lower()


def _register_namespace(env_id: str) -> None:
    """Imports the library that registers ``env_id``'s namespace (gymnasium 1.x no longer does it itself)."""
    folded = fold_gym_id(env_id)
    for namespace, (module_name, install) in NAMESPACE_MODULES.items():
        if not folded.startswith(fold_gym_id(namespace) + "-"):
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            msg = f"gym id {env_id!r} needs {module_name}, which is not installed; run: {install}"
            raise MissingRequirementError(msg) from exc
        gymnasium.register_envs(module)


def check_gym_id(env_id: str) -> str:
    """The registered gymnasium id ``env_id`` names, verbatim or in its path-safe spelling.

    ``dm_control/cartpole-swingup-v0`` and ``dm-control-cartpole-swingup-v0`` both name the same env; the
    second keeps run folders and file names free of ``/`` and ``_``.

    Raises:
        ValueError: unknown or ambiguous id; the message lists the closest registered ids.
        MissingRequirementError: the id's namespace needs a library that is not installed.
    """
    _register_namespace(env_id)
    if env_id in gymnasium.registry:
        return env_id
    folded = fold_gym_id(env_id)
    matches = [key for key in gymnasium.registry if fold_gym_id(key) == folded]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        msg = f"{env_id!r} matches several gymnasium ids ({', '.join(matches)}); write one of them exactly."
        raise ValueError(msg)
    close = difflib.get_close_matches(env_id, list(gymnasium.registry), n=5, cutoff=0.5)
    hint = f" Close ids: {', '.join(close)}." if close else ""
    msg = (
        f"gymnasium has no env {env_id!r}.{hint} Use `gym-<id>` with an id from gymnasium.registry "
        "(dm_control tasks: `gym-dm-control-<domain>-<task>-v0`)."
    )
    raise ValueError(msg)


class _FlattenDict(gymnasium.ObservationWrapper):
    """Concatenates every entry of a Dict observation (scalars included) into one float32 vector."""

    def __init__(self, env: gymnasium.Env[Any, Any]):
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Dict):
            msg = f"flatten_dict_obs needs a Dict observation space; this env has {type(space).__name__}."
            raise ValueError(msg)
        self._keys = list(space.spaces)
        width = 0
        for key in self._keys:
            shape = space[key].shape
            if shape is None:
                msg = f"flatten_dict_obs needs fixed-shape entries; {key!r} is {space[key]}."
                raise ValueError(msg)
            width += int(np.prod(shape))
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, shape=(width,), dtype=np.float32)

    def observation(self, observation: dict[str, Any]) -> np.ndarray:
        parts = [np.asarray(observation[key], dtype=np.float32).reshape(-1) for key in self._keys]
        return np.concatenate(parts)


class _ScalarsAsVectors(gymnasium.ObservationWrapper):
    """Gives shape-``()`` Box entries of a Dict observation shape ``(1,)`` (dm_control reports some as scalars),
    so that every key is a vector the timestep encoder can concatenate."""

    def __init__(self, env: gymnasium.Env[Any, Any]):
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Dict):
            msg = f"_ScalarsAsVectors needs a Dict observation space; this env has {type(space).__name__}."
            raise ValueError(msg)
        spaces = dict(space.spaces)
        scalars = {k: s for k, s in spaces.items() if isinstance(s, gymnasium.spaces.Box) and s.shape == ()}
        self._scalars = list(scalars)
        for key, old in scalars.items():
            spaces[key] = gymnasium.spaces.Box(
                np.reshape(old.low, (1,)), np.reshape(old.high, (1,)), shape=(1,), dtype=old.dtype
            )
        self.observation_space = gymnasium.spaces.Dict(spaces)

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        out = dict(observation)
        for key in self._scalars:
            out[key] = np.reshape(out[key], (1,))
        return out


class GymSuite(BuiltinSuite):
    """The ``gym`` env suite: ``gym-<gymnasium id>`` (default ``gym-CartPole-v1``)."""

    config_type = GymConfig
    config: GymConfig

    def __init__(self, config: GymConfig | None = None):
        super().__init__(config)
        # Resolved here, not per env, so that a typo fails when the experiment is built.
        self.gym_id = check_gym_id(self.required_task)

    @property
    def default_task(self) -> str:
        """CartPole-v1: a registered id that needs no optional library."""
        return GYM_DEFAULT_TASK

    @property
    def env_name(self) -> str:
        """The gymnasium id with ``/`` and ``_`` written as ``-`` (file names split on ``_``)."""
        return self.gym_id.replace("/", "-").replace("_", "-")

    def make_gym_env(self) -> gymnasium.Env[Any, Any]:
        """``gymnasium.make(task, **make_kwargs)``, with dict observations made encoder-friendly."""
        kwargs = dict(self.config.make_kwargs)
        if self.config.max_episode_steps is not None:
            kwargs["max_episode_steps"] = self.config.max_episode_steps
        env = gymnasium.make(self.gym_id, **kwargs)
        if isinstance(env.observation_space, gymnasium.spaces.Dict):
            env = _FlattenDict(env) if self.config.flatten_dict_obs else _ScalarsAsVectors(env)
        return env
