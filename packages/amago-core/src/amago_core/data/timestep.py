"""``Timestep``: one batched policy input, time-aligned to the policy.

A timestep pairs the *current* observation o_t with what happened since the previous observation: the action
a_{t-1} that led to o_t and the reward r_{t-1} received for it. At an episode start both are zero and the time
index is 0. Every array carries a leading batch dimension (one row per env).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


class PolicyInput(NamedTuple):
    """What a policy reads at one step, with a leading batch dimension ``N``.

    Attributes:
        obs: observation key -> ``(N, *shape)`` array (env dtype).
        rl2: ``(N, 1 + A)`` float32: previous reward, then previous action (AMAGO's order).
        time_idx: ``(N, 1)`` int64 steps since the episode started.
    """

    obs: dict[str, np.ndarray]
    rl2: np.ndarray
    time_idx: np.ndarray


@dataclass(slots=True)
class Timestep:
    """One (batched) step of experience as the policy sees it.

    Attributes:
        obs: observation key -> ``(N, *shape)`` array, the current observation o_t.
        prev_action: ``(N, A)`` action a_{t-1} that led to o_t; zeros at an episode start. uint8 one-hot for
            Discrete, uint8 0/1 for MultiBinary, float32 in [-1, 1] for Box.
        reward: ``(N,)`` float32 reward r_{t-1} received after ``prev_action``; 0 at an episode start.
        time_idx: ``(N,)`` int64 steps since the episode started.
        terminal: ``(N,)`` bool, True iff o_t is *terminated* (truncation is not terminal: the value of o_t
            still bootstraps).
    """

    obs: dict[str, np.ndarray]
    prev_action: np.ndarray
    reward: np.ndarray
    time_idx: np.ndarray
    terminal: np.ndarray

    def __post_init__(self) -> None:
        problems = []
        if self.reward.ndim != 1:
            problems.append(f"reward has shape {self.reward.shape}, expected (batch,)")
        n = self.reward.shape[0] if self.reward.ndim == 1 else None
        for name, arr, ndim in (
            ("prev_action", self.prev_action, 2),
            ("time_idx", self.time_idx, 1),
            ("terminal", self.terminal, 1),
        ):
            if arr.ndim != ndim or arr.shape[0] != n:
                problems.append(f"{name} has shape {arr.shape}, expected batch {n} and {ndim} dims")
        for key, arr in self.obs.items():
            if arr.ndim < 1 or arr.shape[0] != n:
                problems.append(f"obs[{key!r}] has shape {arr.shape}, expected a leading batch dim of {n}")
        if problems:
            msg = (
                "Timestep arrays disagree: " + "; ".join(problems) + ". Every array needs the same batch dim."
            )
            raise ValueError(msg)

    @property
    def batch_size(self) -> int:
        """Number of rows (envs) in this timestep."""
        return self.reward.shape[0]

    def rl2(self) -> np.ndarray:
        """``(N, 1 + A)`` float32: previous reward first, then the previous action."""
        out = np.empty((self.batch_size, 1 + self.prev_action.shape[1]), dtype=np.float32)
        out[:, 0] = self.reward
        out[:, 1:] = self.prev_action
        return out

    def as_input(self) -> PolicyInput:
        """The policy input ``(obs, rl2, time_idx[:, None])``."""
        return PolicyInput(self.obs, self.rl2(), self.time_idx[:, None].astype(np.int64, copy=False))

    def reset_version(self, rows: Sequence[int] | np.ndarray) -> Timestep:
        """A copy where ``rows`` look like an episode start (obs kept; action, reward, time, terminal zeroed).

        Used for already-vectorised envs that reset themselves: the obs they return on a done step is the new
        episode's first observation, but the rest of the timestep still describes the old episode.
        """
        out = self.copy()
        idx = np.asarray(rows, dtype=np.int64)
        out.prev_action[idx] = 0
        out.reward[idx] = 0.0
        out.time_idx[idx] = 0
        out.terminal[idx] = False
        return out

    def _map(self, fn: Callable[[np.ndarray], np.ndarray]) -> Timestep:
        return Timestep(
            obs={k: fn(v) for k, v in self.obs.items()},
            prev_action=fn(self.prev_action),
            reward=fn(self.reward),
            time_idx=fn(self.time_idx),
            terminal=fn(self.terminal),
        )

    def copy(self) -> Timestep:
        """A deep copy (every array copied)."""
        return self._map(lambda v: v.copy())

    def row(self, i: int) -> Timestep:
        """Row ``i`` as its own timestep with batch size 1 (copied, so later in-place edits cannot leak)."""
        return self._map(lambda v: v[i : i + 1].copy())

    def split(self) -> list[Timestep]:
        """One batch-size-1 timestep per row."""
        return [self.row(i) for i in range(self.batch_size)]

    @staticmethod
    def concat(timesteps: Sequence[Timestep]) -> Timestep:
        """Stacks timesteps along the batch dimension (the inverse of :meth:`split`)."""
        if not timesteps:
            msg = "Timestep.concat needs at least one timestep."
            raise ValueError(msg)
        first = timesteps[0]
        return Timestep(
            obs={k: np.concatenate([t.obs[k] for t in timesteps]) for k in first.obs},
            prev_action=np.concatenate([t.prev_action for t in timesteps]),
            reward=np.concatenate([t.reward for t in timesteps]),
            time_idx=np.concatenate([t.time_idx for t in timesteps]),
            terminal=np.concatenate([t.terminal for t in timesteps]),
        )
