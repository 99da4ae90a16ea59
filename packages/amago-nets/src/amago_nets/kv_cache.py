"""The Transformer's rollout state: a per-row ring-buffer KV cache holding each env's last ``context`` steps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from amago_nets.base import dones_as_mask


@dataclass(frozen=True)
class KVCache:
    """Keys and values of every layer, plus how many steps each row has seen since its episode began.

    A row's step ``n`` (counted from its reset) is written to slot ``n % context``, so once a row has seen
    ``context`` steps each new step overwrites its oldest one: a sliding window per row, with no copying.
    Slot order does not matter to attention because positions are encoded from absolute episode time before
    keys are cached. Until a row wraps, its valid slots are the prefix ``[0, steps]``.

    Attributes:
        keys: (n_layers, B, context, n_heads, head_dim).
        values: same shape as ``keys``.
        lengths: (B,) int64, steps seen by each row since its last reset (not capped).
    """

    keys: torch.Tensor
    values: torch.Tensor
    lengths: torch.Tensor

    @classmethod
    def empty(
        cls,
        n_layers: int,
        batch_size: int,
        context: int,
        n_heads: int,
        head_dim: int,
        device: torch.device | str,
        dtype: torch.dtype = torch.float32,
    ) -> KVCache:
        """A cache for ``batch_size`` fresh episodes."""
        shape = (n_layers, batch_size, context, n_heads, head_dim)
        # Zeros, not NaN: stale slots are masked, but a NaN times a zero weight would still poison a sum.
        return cls(
            keys=torch.zeros(shape, device=device, dtype=dtype),
            values=torch.zeros(shape, device=device, dtype=dtype),
            lengths=torch.zeros(batch_size, dtype=torch.long, device=device),
        )

    @property
    def batch_size(self) -> int:
        """Number of rows (envs)."""
        return self.keys.shape[1]

    @property
    def context(self) -> int:
        """Number of steps each row keeps."""
        return self.keys.shape[2]

    def write_slots(self) -> torch.Tensor:
        """(B,) slot each row's next step is written to."""
        return self.lengths % self.context

    def valid_after_write(self) -> torch.Tensor:
        """(B,) number of valid slots once the next step is written (a prefix until the row wraps)."""
        return (self.lengths + 1).clamp(max=self.context)

    def write(self, layer: int, key: torch.Tensor, value: torch.Tensor) -> None:
        """Stores one step's (B, 1, H, d) key and value of ``layer`` in each row's next slot (in place)."""
        rows = torch.arange(self.batch_size, device=self.keys.device)
        slots = self.write_slots()
        self.keys[layer, rows, slots] = key[:, 0].to(self.keys.dtype)
        self.values[layer, rows, slots] = value[:, 0].to(self.values.dtype)

    def advanced(self) -> KVCache:
        """The cache after every row's step has been written by all layers."""
        return KVCache(self.keys, self.values, self.lengths + 1)

    def reset(self, dones: np.ndarray | torch.Tensor) -> KVCache:
        """Rows where ``dones`` is True start over: their stale slots are masked out, not cleared."""
        done_mask = dones_as_mask(dones, self.batch_size, self.lengths.device)
        return KVCache(self.keys, self.values, self.lengths.masked_fill(done_mask, 0))
