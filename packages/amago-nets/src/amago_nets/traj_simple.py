"""Memoryless trajectory encoders: ``identity`` and ``ff`` (baselines that isolate the value of memory)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from amago_nets.base import TrajEncoder
from amago_nets.layers import FFBlock, activation_module, normalization
from amago_nets.real_steps import RealSteps
from amago_nets.specs import FFTrajEncoderConfig, IdentityTrajEncoderConfig


class IdentityTrajEncoder(TrajEncoder):
    """Returns the timestep embeddings unchanged (``emb_dim == tstep_dim``)."""

    def __init__(
        self, config: IdentityTrajEncoderConfig | None = None, *, tstep_dim: int, max_seq_len: int
    ) -> None:
        super().__init__(config or IdentityTrajEncoderConfig(), tstep_dim=tstep_dim, max_seq_len=max_seq_len)

    @property
    def emb_dim(self) -> int:
        """Same as the input size."""
        return self.tstep_dim

    def forward(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: Any = None
    ) -> tuple[torch.Tensor, Any]:
        """Returns ``seq`` and the (unused) hidden state."""
        return seq, hidden_state


class FFTrajEncoder(TrajEncoder):
    """Linear → activation → residual feed-forward blocks → Linear → norm, applied to each timestep alone.

    An attention-less Transformer: same batch shapes and similar capacity, but no memory.
    """

    def __init__(
        self, config: FFTrajEncoderConfig | None = None, *, tstep_dim: int, max_seq_len: int
    ) -> None:
        config = config or FFTrajEncoderConfig()
        super().__init__(config, tstep_dim=tstep_dim, max_seq_len=max_seq_len)
        d_ff = config.d_ff or 4 * config.d_model
        self.d_model = config.d_model
        self.inp = nn.Linear(tstep_dim, config.d_model)
        self.act = activation_module(config.activation)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(
            FFBlock(config.d_model, d_ff, config.dropout, config.activation, config.norm)
            for _ in range(config.n_layers)
        )
        self.out = nn.Linear(config.d_model, config.d_model)
        self.out_norm = normalization(config.out_norm, config.d_model)

    @property
    def emb_dim(self) -> int:
        """``d_model``."""
        return self.d_model

    def forward(
        self,
        seq: torch.Tensor,
        time_idxs: torch.Tensor,
        hidden_state: Any = None,
        pad_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Encodes each timestep on its own (the real ones only when ``pad_mask`` marks padding); the hidden
        state passes through untouched."""
        real = RealSteps.of_window(pad_mask)
        if real is not None:
            return real.put(self._encode(real.take(seq))), hidden_state
        return self._encode(seq), hidden_state

    def _encode(self, seq: torch.Tensor) -> torch.Tensor:
        x = self.drop(self.act(self.inp(seq)))
        for block in self.blocks:
            x = block(x)
        return self.drop(self.out_norm(self.out(x)))
