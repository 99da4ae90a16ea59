"""``Batch``: right-padded training examples with an explicit boolean mask.

AMAGO padded with the value 4.0 and recovered the mask by looking for rows of 4.0; here padding is zero and the
mask is data, so no field's value range matters (uint8 images, bool flags and time indices pad safely).

Shapes, with B examples padded to L observations:

==============  =====================  ===========
field           shape                  dtype
==============  =====================  ===========
obs[k]          (B, L, *shape)         as stored
rl2s            (B, L, 1 + A)          float32
time_idxs       (B, L, 1)              int64
rews            (B, L - 1, 1)          float32
dones           (B, L - 1, 1)          bool (terminated: stops bootstrapping)
actions         (B, L - 1, A)          float32
mask            (B, L)                 bool (observation is real)
==============  =====================  ===========

Transition t is real iff observation t + 1 is (``transition_mask``); causal models need no attention mask
because padding is always on the right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from amago_core.data.rldata import RLData


@dataclass(slots=True)
class Batch:
    """A padded batch (numpy arrays, or torch tensors after :meth:`to_torch`)."""

    obs: dict[str, Any]
    rl2s: Any
    time_idxs: Any
    rews: Any
    dones: Any
    actions: Any
    mask: Any

    @property
    def transition_mask(self) -> Any:
        """``(B, L - 1)``: transition t counts iff observation t + 1 is real."""
        return self.mask[:, 1:]

    @property
    def batch_size(self) -> int:
        """Number of examples."""
        return int(self.mask.shape[0])

    @property
    def seq_len(self) -> int:
        """Padded number of observations L."""
        return int(self.mask.shape[1])

    def to_torch(self, device: Any = None, non_blocking: bool = False) -> Batch:
        """The same batch as torch tensors (``rl2s``/``rews``/``actions`` float, ``time_idxs`` long)."""
        import torch  # the data layer is numpy; torch is only needed when a batch meets a model

        def conv(x: Any) -> Any:
            t = x if isinstance(x, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(x))
            return t.to(device, non_blocking=non_blocking) if device is not None else t

        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return Batch(
            obs={k: conv(v) for k, v in out.pop("obs").items()},
            **{k: conv(v) for k, v in out.items()},
        )


def _pad_stack(arrays: Sequence[np.ndarray], length: int) -> np.ndarray:
    first = arrays[0]
    out = np.zeros((len(arrays), length, *first.shape[1:]), dtype=first.dtype)
    for i, a in enumerate(arrays):
        out[i, : len(a)] = a
    return out


def collate(examples: Sequence[RLData]) -> Batch:
    """Right-pads examples to the longest one and records which observations are real.

    Raises:
        ValueError: the examples disagree on observation keys, or the list is empty.
    """
    if not examples:
        msg = "collate needs at least one example."
        raise ValueError(msg)
    keys = set(examples[0].obs)
    for ex in examples[1:]:
        if set(ex.obs) != keys:
            msg = f"examples disagree on observation keys: {sorted(keys)} vs {sorted(ex.obs)}."
            raise ValueError(msg)
    lengths = [len(ex.rl2s) for ex in examples]
    big_l = max(lengths)
    return Batch(
        obs={k: _pad_stack([ex.obs[k] for ex in examples], big_l) for k in examples[0].obs},
        rl2s=_pad_stack([np.asarray(ex.rl2s, dtype=np.float32) for ex in examples], big_l),
        time_idxs=_pad_stack([np.asarray(ex.time_idxs, dtype=np.int64) for ex in examples], big_l),
        rews=_pad_stack([np.asarray(ex.rews, dtype=np.float32) for ex in examples], big_l - 1),
        dones=_pad_stack([np.asarray(ex.dones, dtype=bool) for ex in examples], big_l - 1),
        actions=_pad_stack([np.asarray(ex.actions, dtype=np.float32) for ex in examples], big_l - 1),
        mask=np.arange(big_l) < np.array(lengths)[:, None],
    )


@dataclass(frozen=True, slots=True)
class LengthGroupedCollate:
    """Collates a pool of examples into ``groups`` batches of similar lengths, each with its loss weight.

    Batches pad to their longest example, so a batch of mixed episode lengths (meta-RL rollouts that end early,
    episodic tasks shorter than ``max_seq_len``) spends most of its compute on padding. Sorting a pool of
    ``groups`` batches' worth of examples by length before splitting it cuts that padding without changing which
    examples are trained on. The agents average their losses over a batch's real timesteps, which would give a
    timestep of a short-episode batch more weight than one of a long-episode batch; each batch's weight (its
    real transitions over the pool's mean per batch) restores the weight every timestep had before grouping.

    Args:
        groups: batches per pool; 1 gives one ordinary batch of weight 1.
    """

    groups: int = 1

    def __call__(self, examples: Sequence[RLData]) -> list[tuple[Batch, float]]:
        """``[(batch, loss_weight), ...]`` in a random order (seeded by the pool's lengths, so reproducible).

        Raises:
            ValueError: the pool is empty or its examples disagree on observation keys.
        """
        if self.groups == 1 or len(examples) <= 1:
            return [(collate(examples), 1.0)]
        lengths = np.array([len(ex.rl2s) for ex in examples], dtype=np.int64)
        order = np.argsort(lengths, kind="stable")
        chunks = [chunk for chunk in np.array_split(order, min(self.groups, len(examples))) if len(chunk)]
        # Transition t is real iff observation t + 1 is: an example of n observations has n - 1 transitions.
        real = np.array([float((lengths[chunk] - 1).sum()) for chunk in chunks])
        weights = real / real.mean() if real.sum() > 0 else np.ones(len(chunks))
        shuffled = np.random.default_rng(lengths.tolist()).permutation(len(chunks))
        return [(collate([examples[i] for i in chunks[j]]), float(weights[j])) for j in shuffled]
