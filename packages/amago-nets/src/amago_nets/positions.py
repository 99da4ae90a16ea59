"""Position encodings of absolute episode time (not of the index within a window).

Absolute time is what lets a Transformer trained on windows cut at arbitrary episode steps run with a
sliding KV cache at rollout time: a cached key keeps the position it was written with.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class FixedPosEmb(nn.Module):
    """Sinusoidal embedding of time indices, computed on the fly (any episode length)."""

    freqs: torch.Tensor

    def __init__(self, d_model: int) -> None:
        super().__init__()
        half = d_model // 2
        freqs = torch.exp(-math.log(10_000.0) * torch.arange(half, dtype=torch.float32) / max(half, 1))
        self.register_buffer("freqs", freqs, persistent=False)
        self.d_model = d_model

    def forward(self, time_idxs: torch.Tensor) -> torch.Tensor:
        """(B, L) integer times → (B, L, d_model)."""
        angles = time_idxs.float().unsqueeze(-1) * self.freqs
        # sin and cos interleaved (even features sin, odd cos), AMAGO's layout: the embedding is added to a
        # learned projection, so a checkpoint trained with one layout means something else under another.
        emb = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)
        if emb.shape[-1] < self.d_model:
            # Odd widths get one zero column so the embedding can be added to the residual stream.
            emb = torch.nn.functional.pad(emb, (0, self.d_model - emb.shape[-1]))
        return emb


class LearnablePosEmb(nn.Module):
    """A learned table of ``max_time_idx`` embeddings; later times share the last entry."""

    def __init__(self, d_model: int, max_time_idx: int) -> None:
        super().__init__()
        self.table = nn.Embedding(max_time_idx, d_model)
        self.max_time_idx = max_time_idx

    def forward(self, time_idxs: torch.Tensor) -> torch.Tensor:
        """(B, L) integer times → (B, L, d_model)."""
        # Clamping (not raising) keeps a rollout longer than the table alive instead of crashing a run.
        return self.table(time_idxs.long().clamp(0, self.max_time_idx - 1))


class RotaryPosEmb(nn.Module):
    """Rotary embedding (Llama's half-split form, base 10000) applied to queries and keys per head."""

    inv_freq: torch.Tensor

    def __init__(self, head_dim: int) -> None:
        super().__init__()
        half = head_dim // 2
        inv_freq = 1.0 / (10_000.0 ** (torch.arange(half, dtype=torch.float32) / half))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: torch.Tensor, time_idxs: torch.Tensor) -> torch.Tensor:
        """Rotates (B, L, H, head_dim) by the angle of each step's time index."""
        angles = time_idxs.float().unsqueeze(-1) * self.inv_freq  # (B, L, half)
        cos = angles.cos().unsqueeze(2).to(x.dtype)
        sin = angles.sin().unsqueeze(2).to(x.dtype)
        first, second = x.chunk(2, dim=-1)
        return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)
