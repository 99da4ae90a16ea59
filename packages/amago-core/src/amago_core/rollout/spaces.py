"""The spaces a run's agent was built with, as JSON: what loading its policy needs, without building an env.

A run writes them to ``spaces.json`` in its folder when it starts (next to ``config.resolved.json``). They hold
the agent's own spaces (AMAGOEnv's observation dict, the previous reward + action box, the policy's action
space) and the env's own one-row observation and action spaces, which turn a plain gymnasium env's
observations into the agent's input and the agent's actions back into the env's (Discrete offsets, Box bounds).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from amago_core.rollout.action_mask import ActionMaskSpec

SPACES_FORMAT = 1
"""Version of the ``spaces.json`` layout."""


class SpaceRecordError(ValueError):
    """A space that ``spaces.json`` cannot hold, or a record that is not a space."""


def _number(value: float) -> float | str:
    # JSON has no inf or nan; writing them as strings keeps the file standard JSON.
    return float(value) if math.isfinite(value) else str(float(value))


def _bounds(values: np.ndarray) -> Any:
    """One number when every entry is the same (image bounds), else the nested list."""
    flat = values.reshape(-1)
    if flat.size and bool(np.all(flat == flat[0])):
        return _number(float(flat[0]))
    return np.vectorize(_number, otypes=[object])(values).tolist() if values.size else []


def space_to_json(space: gym.Space[Any]) -> dict[str, Any]:
    """A JSON-safe record of a Box, Discrete, MultiBinary, MultiDiscrete or Dict space (what AMAGOEnv allows).

    Raises:
        SpaceRecordError: another kind of space.
    """
    if isinstance(space, gym.spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": np.dtype(space.dtype).name,
            "low": _bounds(space.low),
            "high": _bounds(space.high),
        }
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.MultiBinary):
        sizes = np.asarray(space.n)
        return {"type": "MultiBinary", "n": int(sizes) if sizes.ndim == 0 else sizes.astype(int).tolist()}
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {
            "type": "MultiDiscrete",
            "nvec": space.nvec.tolist(),
            "start": space.start.tolist(),
            "dtype": np.dtype(space.dtype).name,
        }
    if isinstance(space, gym.spaces.Dict):
        return {"type": "Dict", "spaces": {key: space_to_json(sub) for key, sub in space.spaces.items()}}
    msg = f"cannot record a {type(space).__name__} space; amago's envs use Box, Discrete, MultiBinary, MultiDiscrete and Dict."
    raise SpaceRecordError(msg)


def space_from_json(data: Mapping[str, Any]) -> gym.Space[Any]:
    """The space :func:`space_to_json` recorded.

    Raises:
        SpaceRecordError: the record is not one of those spaces.
    """
    kind = data.get("type") if isinstance(data, Mapping) else None
    try:
        if kind == "Box":
            dtype, shape = np.dtype(data["dtype"]), tuple(data["shape"])
            # Bounds are stored as float64 (one number when uniform); the space holds them in its own dtype.
            low = np.broadcast_to(np.asarray(data["low"], dtype=np.float64), shape).astype(dtype)
            high = np.broadcast_to(np.asarray(data["high"], dtype=np.float64), shape).astype(dtype)
            return gym.spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
        if kind == "Discrete":
            return gym.spaces.Discrete(int(data["n"]), start=int(data["start"]))
        if kind == "MultiBinary":
            n = data["n"]
            return gym.spaces.MultiBinary(int(n) if isinstance(n, int) else [int(size) for size in n])
        if kind == "MultiDiscrete":
            return gym.spaces.MultiDiscrete(
                np.asarray(data["nvec"]), dtype=np.dtype(data["dtype"]), start=np.asarray(data["start"])
            )
        if kind == "Dict":
            return gym.spaces.Dict({key: space_from_json(sub) for key, sub in data["spaces"].items()})
    except SpaceRecordError:
        raise  # a part of a Dict, already described
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"a recorded {kind} space is damaged ({type(exc).__name__}: {exc})."
        raise SpaceRecordError(msg) from exc
    msg = f"not a recorded space: type {kind!r}."
    raise SpaceRecordError(msg)


def _one_row_spaces(env: Any) -> tuple[gym.Space[Any], gym.Space[Any]]:
    """The observation and action spaces of one row of the gymnasium env an AMAGOEnv wraps.

    Read the way AMAGOEnv reads them (an already-vectorised env's ``single_*`` spaces). An AMAGOEnv-like env
    that wraps nothing gives its own spaces.
    """
    inner = getattr(env, "env", None)
    if inner is None:
        return env.observation_space, env.action_space
    batched = int(getattr(env, "batched_envs", 1)) > 1
    obs = getattr(inner, "single_observation_space", None) if batched else None
    action = getattr(inner, "single_action_space", None) if batched else None
    return obs or inner.observation_space, action or inner.action_space


@dataclass(frozen=True)
class PolicySpaces:
    """What an agent is built with, plus the env's own spaces to speak with a plain gymnasium env.

    Attributes:
        obs_space: the agent's observation space (AMAGOEnv's ``Dict`` of one row).
        rl2_space: ``Box((1 + A,))``: previous reward, then previous action.
        action_space: the agent's action space (Box actions in [-1, 1], Discrete from 0).
        env_observation_space: one row's observation space of the env itself (what it returns).
        env_action_space: one row's action space of the env itself (what it takes).
        action_mask: where the env's action mask comes from (None: it has none); a policy loaded later reads
            the mask from the same observation or ``info`` key.
    """

    obs_space: gym.spaces.Dict
    rl2_space: gym.spaces.Box
    action_space: gym.Space[Any]
    env_observation_space: gym.Space[Any]
    env_action_space: gym.Space[Any]
    action_mask: ActionMaskSpec | None = None

    @classmethod
    def of_env(cls, env: Any) -> PolicySpaces:
        """The spaces of an ``AMAGOEnv`` (what ``Experiment`` reads from its first env)."""
        env_obs, env_action = _one_row_spaces(env)
        return cls(
            obs_space=env.observation_space,
            rl2_space=gym.spaces.Box(-np.inf, np.inf, (1 + int(env.action_dim),), np.float32),
            action_space=env.action_space,
            env_observation_space=env_obs,
            env_action_space=env_action,
            action_mask=getattr(env, "action_mask", None),
        )

    def to_json(self) -> dict[str, Any]:
        """The ``spaces.json`` record."""
        return {
            "format": SPACES_FORMAT,
            "agent": {
                "obs_space": space_to_json(self.obs_space),
                "rl2_space": space_to_json(self.rl2_space),
                "action_space": space_to_json(self.action_space),
            },
            "env": {
                "observation_space": space_to_json(self.env_observation_space),
                "action_space": space_to_json(self.env_action_space),
                "action_mask": self.action_mask.to_json() if self.action_mask is not None else None,
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PolicySpaces:
        """Reads a ``spaces.json`` record.

        Raises:
            SpaceRecordError: a newer layout, or a damaged record.
        """
        if not isinstance(data, Mapping) or data.get("format") != SPACES_FORMAT:
            found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
            msg = f"spaces record of format {found!r}; this amago reads format {SPACES_FORMAT}."
            raise SpaceRecordError(msg)
        try:
            agent, env = data["agent"], data["env"]
            spaces = cls(
                obs_space=space_from_json(agent["obs_space"]),  # type: ignore[arg-type]
                rl2_space=space_from_json(agent["rl2_space"]),  # type: ignore[arg-type]
                action_space=space_from_json(agent["action_space"]),
                env_observation_space=space_from_json(env["observation_space"]),
                env_action_space=space_from_json(env["action_space"]),
                action_mask=ActionMaskSpec.from_json(env.get("action_mask")),  # older records: none
            )
        except (KeyError, TypeError, ValueError) as exc:
            msg = f"the spaces record lacks {exc}."
            raise SpaceRecordError(msg) from exc
        if not isinstance(spaces.obs_space, gym.spaces.Dict) or not isinstance(
            spaces.rl2_space, gym.spaces.Box
        ):
            msg = "the spaces record's agent obs_space must be a Dict and its rl2_space a Box."
            raise SpaceRecordError(msg)
        return spaces
