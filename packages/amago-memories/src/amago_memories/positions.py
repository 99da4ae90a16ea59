"""Fixed sinusoidal embeddings of integer positions (episode times, distances), shared by the attention memories."""

from __future__ import annotations

import math

import torch


def sinusoid(positions: torch.Tensor, dim: int, dtype: torch.dtype) -> torch.Tensor:
    """Sines, then cosines, of integer ``positions`` at ``dim // 2`` geometric frequencies: ``(*positions, dim)``.

    An odd ``dim`` gets a zero last column.
    """
    half = dim // 2
    freqs = torch.exp(
        -math.log(10_000.0) * torch.arange(half, device=positions.device, dtype=torch.float64) / max(half, 1)
    )
    # float64 angles: episode times reach the thousands, where fp32 would already round the phase.
    angles = positions.to(torch.float64)[..., None] * freqs
    emb = torch.cat([angles.sin(), angles.cos(), angles.new_zeros(*angles.shape[:-1], dim - 2 * half)], -1)
    return emb.to(dtype)
