"""``RLData``: one training example (a trajectory or a window of one), as numpy arrays.

With T observations: ``obs``, ``rl2s`` and ``time_idxs`` have T rows; ``rews``, ``dones`` and ``actions`` have
T - 1. A window of ``length`` holds up to ``length + 1`` observations and ``length`` transitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from amago_core.data.trajectory import FrozenTraj

PaddedSampling = Literal["none", "left", "right", "both", "center"]
"""Where window starts are drawn from (see :meth:`RLData.random_slice`)."""

PADDED_SAMPLING_MODES: tuple[str, ...] = ("none", "left", "right", "both", "center")


@dataclass(slots=True)
class RLData:
    """Arrays of one training example.

    Attributes:
        obs: key -> ``(T, *shape)``.
        rews: ``(T - 1, 1)`` float32.
        dones: ``(T - 1, 1)`` bool, *terminated* flags (bootstrapping stops there).
        actions: ``(T - 1, A)`` float32.
        time_idxs: ``(T, 1)`` int64.
        rl2s: ``(T, 1 + A)`` float32.
    """

    obs: dict[str, np.ndarray]
    rews: np.ndarray
    dones: np.ndarray
    actions: np.ndarray
    time_idxs: np.ndarray
    rl2s: np.ndarray

    @classmethod
    def from_frozen(cls, traj: FrozenTraj) -> RLData:
        """Wraps a stored trajectory's arrays (no copy)."""
        return cls(
            obs=traj.obs,
            rews=traj.rews,
            dones=traj.dones,
            actions=traj.actions,
            time_idxs=traj.time_idxs,
            rl2s=traj.rl2s,
        )

    @classmethod
    def from_arrays(
        cls,
        obs: dict[str, np.ndarray],
        rews: np.ndarray,
        dones: np.ndarray,
        actions: np.ndarray,
        time_idxs: np.ndarray,
        rl2s: np.ndarray | None = None,
    ) -> RLData:
        """Builds an example from external arrays; without ``rl2s`` they are rebuilt as
        ``[[0, 0...], [rew_0, act_0], ...]`` (what an episode that starts at this file's first row saw)."""
        if rl2s is None:
            first = np.zeros((1, 1 + actions.shape[1]), dtype=np.float32)
            rest = np.concatenate([rews, actions], axis=1).astype(np.float32)
            rl2s = np.concatenate([first, rest], axis=0)
        return cls(obs=obs, rews=rews, dones=dones, actions=actions, time_idxs=time_idxs, rl2s=rl2s)

    def __len__(self) -> int:
        """Number of transitions (T - 1)."""
        return len(self.actions)

    def random_slice(
        self, length: int, padded_sampling: PaddedSampling = "none", rng: np.random.Generator | None = None
    ) -> RLData:
        """A random window of ``length`` transitions (``length + 1`` observations) or fewer.

        ``padded_sampling`` picks the range of the window start ``s`` (inclusive, ``n = len(self)``):
        ``none``: ``[0, n - length]`` (full windows only), ``left``: ``[-length + 1, n - length]`` (extra
        shorter windows that start at the file start), ``right``: ``[0, n - 2]`` (extra shorter windows that
        end at the file end), ``both``: ``[-length + 1, n - 2]``. A negative start gives a shorter window
        starting at row 0; the collate function pads on the right and records a mask. ``center``: a centre ``c``
        uniform over ``[0, n)``, ``s = c - length // 2`` clamped to ``[0, n - length]`` (full windows only). A
        file no longer than ``length`` is returned whole.
        """
        if padded_sampling not in PADDED_SAMPLING_MODES:
            msg = f"padded_sampling must be one of {PADDED_SAMPLING_MODES}; got {padded_sampling!r}."
            raise ValueError(msg)
        n = len(self)
        if n <= length:
            return self
        rng = rng if rng is not None else np.random.default_rng()
        if padded_sampling == "center":
            # Clamping piles the windows of edge centres onto the first and last start: a file's first and last
            # steps are trained on about length / (2n) of the time each, not 1 / (n - length + 1), unpadded.
            start = min(max(int(rng.integers(n)) - length // 2, 0), n - length)
        else:
            low = -length + 1 if padded_sampling in ("left", "both") else 0
            high = n - 2 if padded_sampling in ("right", "both") else n - length
            start = int(rng.integers(low, max(high, low) + 1))
        stop = start + length
        start = max(start, 0)
        obs_sl, tr_sl = slice(start, stop + 1), slice(start, stop)
        return RLData(
            obs={k: v[obs_sl] for k, v in self.obs.items()},
            rews=self.rews[tr_sl],
            dones=self.dones[tr_sl],
            actions=self.actions[tr_sl],
            time_idxs=self.time_idxs[obs_sl],
            rl2s=self.rl2s[obs_sl],
        )
