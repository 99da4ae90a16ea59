"""``Trajectory`` (a list of timesteps being recorded) and ``FrozenTraj`` (its arrays, as stored on disk).

Alignment, with T timesteps: observations, rl2 inputs and time indices have T rows; rewards, terminals and
actions have T - 1 rows, because row t of them is what happened *between* observation t and t + 1 (it is read
from timestep t + 1, whose previous action and reward describe that transition).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from amago_core.data.timestep import Timestep

OBS_KEY_PREFIX = "_OBS_KEY_"
"""Prefix of observation arrays in a flattened trajectory (AMAGO's on-disk layout)."""

TRAJ_ARRAY_KEYS = ("rl2s", "time_idxs", "rews", "dones", "actions")
"""The non-observation arrays of a stored trajectory."""


@dataclass(slots=True)
class FrozenTraj:
    """The arrays of one stored trajectory (no batch dim).

    Attributes:
        obs: key -> ``(T, *shape)``.
        rl2s: ``(T, 1 + A)`` float32, ``[previous reward, previous action]`` of every timestep.
        time_idxs: ``(T, 1)`` int64.
        rews: ``(T - 1, 1)`` float32, reward of each transition.
        dones: ``(T - 1, 1)`` bool, True where the transition ends in a *terminated* observation.
        actions: ``(T - 1, A)`` float32, the action of each transition.
    """

    obs: dict[str, np.ndarray]
    rl2s: np.ndarray
    time_idxs: np.ndarray
    rews: np.ndarray
    dones: np.ndarray
    actions: np.ndarray

    def __len__(self) -> int:
        """Number of transitions (T - 1)."""
        return len(self.actions)

    @property
    def total_return(self) -> float:
        """Sum of this file's rewards."""
        return float(self.rews.sum())

    def to_dict(self) -> dict[str, np.ndarray]:
        """Flat dict in AMAGO's layout: the array keys plus ``_OBS_KEY_<name>`` per observation key."""
        out = {k: getattr(self, k) for k in TRAJ_ARRAY_KEYS}
        out.update({f"{OBS_KEY_PREFIX}{k}": v for k, v in self.obs.items()})
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, np.ndarray]) -> FrozenTraj:
        """Inverse of :meth:`to_dict` (accepts any mapping, e.g. an open ``.npz``).

        Raises:
            KeyError: a required array is missing (names the missing keys).
        """
        keys = set(data.keys())
        missing = [k for k in TRAJ_ARRAY_KEYS if k not in keys]
        if missing:
            msg = f"trajectory arrays missing {missing}; found {sorted(keys)}."
            raise KeyError(msg)
        obs = {k[len(OBS_KEY_PREFIX) :]: np.asarray(data[k]) for k in keys if k.startswith(OBS_KEY_PREFIX)}
        return cls(
            obs=obs,
            rl2s=np.asarray(data["rl2s"], dtype=np.float32),
            time_idxs=np.asarray(data["time_idxs"], dtype=np.int64),
            rews=np.asarray(data["rews"], dtype=np.float32),
            dones=np.asarray(data["dones"], dtype=bool),
            actions=np.asarray(data["actions"], dtype=np.float32),
        )

    def check(self) -> None:
        """Checks that the arrays line up (T rows vs T - 1 rows).

        Raises:
            ValueError: naming the array whose length is off.
        """
        t = len(self.rl2s)
        problems = []
        if len(self.time_idxs) != t:
            problems.append(f"time_idxs has {len(self.time_idxs)} rows")
        problems += [f"obs[{k!r}] has {len(v)} rows" for k, v in self.obs.items() if len(v) != t]
        problems += [
            f"{name} has {len(arr)} rows"
            for name, arr in (("rews", self.rews), ("dones", self.dones), ("actions", self.actions))
            if len(arr) != t - 1
        ]
        if t < 1 or problems:
            msg = f"trajectory with {t} timesteps is misaligned: " + "; ".join(problems or ["no timesteps"])
            raise ValueError(msg)


class Trajectory:
    """Timesteps of one env row, in order; each has batch size 1.

    Args:
        timesteps: the initial timesteps (copied into a new list).
    """

    def __init__(self, timesteps: Iterable[Timestep] = ()) -> None:
        self.timesteps: list[Timestep] = list(timesteps)

    def add_timestep(self, timestep: Timestep) -> None:
        """Appends one batch-size-1 timestep.

        Raises:
            ValueError: the timestep has more than one row (split batched timesteps first).
        """
        if timestep.batch_size != 1:
            msg = f"a Trajectory holds one env row; got a timestep with {timestep.batch_size}. Use .split()."
            raise ValueError(msg)
        self.timesteps.append(timestep)

    def __len__(self) -> int:
        """Number of timesteps."""
        return len(self.timesteps)

    @property
    def total_return(self) -> float:
        """Sum of the rewards received (the first timestep's reward precedes this trajectory and is skipped)."""
        return float(sum(float(t.reward[0]) for t in self.timesteps[1:]))

    def freeze(self) -> FrozenTraj:
        """Stacks the timesteps into the stored arrays.

        Raises:
            ValueError: the trajectory is empty.
        """
        if not self.timesteps:
            msg = "cannot freeze an empty Trajectory; add at least one timestep."
            raise ValueError(msg)
        ts = Timestep.concat(self.timesteps)
        return FrozenTraj(
            obs=ts.obs,
            rl2s=ts.rl2(),
            time_idxs=ts.time_idx[:, None].astype(np.int64),
            rews=ts.reward[1:, None].astype(np.float32),
            dones=ts.terminal[1:, None].astype(bool),
            actions=ts.prev_action[1:].astype(np.float32),
        )
