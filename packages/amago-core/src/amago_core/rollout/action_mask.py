"""Action masks: which actions an env allows at each step, read once by ``AMAGOEnv`` and carried with the data.

An env tells amago its allowed actions through an observation key or an ``info`` key it names
(``AMAGOEnv(env, action_mask_key="legal", action_mask_from="info")``). ``AMAGOEnv`` checks the mask and stores
it in every timestep's observation dict under :data:`ACTION_MASK_KEY`, a boolean vector with one entry per
action (for ``MultiDiscrete`` actions, the dimensions' entries one after the other). From there it travels like
any observation: into trajectory files, training batches and the policy's input, where agents take it out of
what the timestep encoder sees and use it to keep the policy on allowed actions.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
import numpy as np

ACTION_MASK_KEY = "action_mask"
"""The observation key a mask is stored under (a reserved name: an env's own observation may not use it unless it
is the mask)."""

MaskSource = Literal["obs", "info"]


class ActionMaskError(ValueError):
    """An env's action mask is missing, of the wrong shape, or allows no action; the message names env and key."""


@dataclass(frozen=True)
class ActionMaskSpec:
    """Where an env's mask comes from.

    Attributes:
        key: the observation key (``where="obs"``) or ``info`` key (``where="info"``) that holds the mask.
        where: ``"obs"`` (a key of the env's Dict observation, taken out of the observation the encoder sees)
            or ``"info"`` (the ``info`` dict of ``reset`` and ``step``).
    """

    key: str
    where: MaskSource = "obs"

    def __post_init__(self) -> None:
        if self.where not in ("obs", "info"):
            msg = f"action_mask_from must be 'obs' or 'info', not {self.where!r}"
            raise ValueError(msg)
        if not isinstance(self.key, str) or not self.key:
            msg = f"action_mask_key must be a non-empty string, not {self.key!r}"
            raise ValueError(msg)

    def describe(self) -> str:
        """``obs['legal']`` or ``info['legal']``, for messages."""
        return f"{self.where}[{self.key!r}]"

    def to_json(self) -> dict[str, str]:
        return {"key": self.key, "from": self.where}

    @classmethod
    def from_json(cls, data: Any) -> ActionMaskSpec | None:
        if data is None:
            return None
        return cls(key=str(data["key"]), where=data["from"])


def mask_width(action_space: gym.Space[Any], env_name: str) -> int:
    """Entries of a mask for ``action_space``: ``n`` for Discrete, the sum of ``nvec`` for MultiDiscrete.

    Raises:
        ActionMaskError: another action space (a mask of continuous or binary actions has no meaning here).
    """
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return int(np.asarray(action_space.nvec).sum())
    msg = (
        f"env {env_name!r} names an action mask, but its actions are {type(action_space).__name__}; masks apply "
        "to Discrete and MultiDiscrete actions. Drop action_mask_key for this env."
    )
    raise ActionMaskError(msg)


def mask_segments(action_space: gym.Space[Any]) -> list[int]:
    """The mask's entries per action dimension: ``[n]`` for Discrete, ``nvec`` for MultiDiscrete (each dimension
    needs an allowed choice of its own)."""
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return [int(size) for size in np.asarray(action_space.nvec).reshape(-1)]
    return [int(getattr(action_space, "n", 0))]


def mask_space(width: int) -> gym.spaces.Box:
    """The observation space of a stored mask: ``width`` booleans."""
    # gymnasium's stubs type Box's dtype as a float type, but a bool Box is a valid space (sample, contains).
    return gym.spaces.Box(low=0, high=1, shape=(width,), dtype=np.bool_)  # type: ignore[arg-type]


def read_mask(
    value: Any,
    rows: int,
    width: int,
    *,
    env_name: str,
    spec: ActionMaskSpec,
    batched: bool,
    segments: list[int] | None = None,
) -> np.ndarray:
    """The ``(rows, width)`` boolean mask an env gave.

    Args:
        value: what the env returned at the mask's key (one row, or ``rows`` rows when ``batched``).
        rows: env rows this step.
        width: entries per row (:func:`mask_width`).
        env_name: for messages.
        spec: where it came from, for messages.
        batched: whether ``value`` has a leading row dimension.
        segments: entries per action dimension (:func:`mask_segments`); None: one dimension of ``width``.

    Raises:
        ActionMaskError: it is missing, has the wrong shape, holds values other than 0/1, or a row allows no
            action.
    """
    if value is None:
        msg = (
            f"env {env_name!r} gave no action mask at {spec.describe()}; return it at every reset and step, or "
            "drop action_mask_key for this env."
        )
        raise ActionMaskError(msg)
    arr = np.asarray(value)
    want = (rows, width) if batched else (width,)
    if arr.shape != want:
        msg = (
            f"env {env_name!r} gave an action mask of shape {arr.shape} at {spec.describe()}; expected {want} "
            "(one entry per action). Fix the env's mask or its action space."
        )
        raise ActionMaskError(msg)
    if arr.dtype != bool:
        if arr.dtype.kind not in "biu" or not np.isin(arr, (0, 1)).all():
            msg = (
                f"env {env_name!r} gave an action mask at {spec.describe()} with values other than 0/1 "
                f"({arr.dtype}); give booleans (True: allowed)."
            )
            raise ActionMaskError(msg)
        arr = arr.astype(bool)
    else:
        arr = arr.copy()
    arr = arr.reshape(rows, width)
    bounds = np.cumsum([0, *(segments or [width])])
    for dim, (start, end) in enumerate(itertools.pairwise(bounds)):
        empty = ~arr[:, start:end].any(axis=1)
        if empty.any():
            where = f" in action dimension {dim}" if segments is not None and len(segments) > 1 else ""
            msg = (
                f"env {env_name!r} gave an action mask at {spec.describe()} that allows no action{where} (row(s) "
                f"{np.flatnonzero(empty).tolist()}); every step needs at least one allowed choice"
                f"{' per dimension' if where else ''}."
            )
            raise ActionMaskError(msg)
    return arr


def encoder_space(space: gym.Space[Any], spec: ActionMaskSpec | None, env_name: str) -> gym.Space[Any]:
    """An env's observation space as the encoder sees it: an observation mask key taken out.

    Raises:
        ActionMaskError: the mask's observation key is not in the space, or the space uses the reserved key
            :data:`ACTION_MASK_KEY` for something that is not named as the mask.
    """
    spaces = space.spaces if isinstance(space, gym.spaces.Dict) else None
    if spec is not None and spec.where == "obs":
        if spaces is None or spec.key not in spaces:
            msg = (
                f"env {env_name!r} has no observation key {spec.key!r} for its action mask; name a key of its Dict "
                "observation, or pass action_mask_from='info' if the mask comes in info."
            )
            raise ActionMaskError(msg)
        return gym.spaces.Dict({k: v for k, v in spaces.items() if k != spec.key})
    if spaces is not None and ACTION_MASK_KEY in spaces:
        msg = (
            f"env {env_name!r} has an observation key {ACTION_MASK_KEY!r}, amago's name for action masks: pass "
            f"AMAGOEnv(..., action_mask_key={ACTION_MASK_KEY!r}) if it is one, or rename it."
        )
        raise ActionMaskError(msg)
    return space


def mask_of(
    spec: ActionMaskSpec,
    raw_obs: Any,
    info: Any,
    rows: int,
    width: int,
    *,
    env_name: str,
    segments: list[int] | None = None,
) -> np.ndarray:
    """The ``(rows, width)`` mask an env returned with ``raw_obs`` and ``info`` (see :func:`read_mask`)."""
    if spec.where == "obs":
        value = raw_obs.get(spec.key) if isinstance(raw_obs, dict) or hasattr(raw_obs, "get") else None
    else:
        value = info.get(spec.key) if isinstance(info, dict) else None
    return read_mask(value, rows, width, env_name=env_name, spec=spec, batched=rows > 1, segments=segments)


def sample_allowed(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One uniformly random allowed action per row of a ``(rows, n)`` Discrete mask."""
    scores = rng.random(mask.shape)
    scores[~mask] = -1.0  # below every draw: a masked action never wins
    return scores.argmax(axis=1)
