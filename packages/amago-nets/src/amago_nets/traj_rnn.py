"""The ``rnn`` (GRU) trajectory encoder."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from amago_nets.base import TrajEncoder, dones_as_mask
from amago_nets.layers import normalization
from amago_nets.specs import RNNTrajEncoderConfig


class GRUTrajEncoder(TrajEncoder):
    """Stacked GRU → Linear → norm.

    Training windows start from a zero state. Rollouts carry the GRU state ``(n_layers, B, d_hidden)`` without
    truncation; :meth:`reset_hidden_state` zeroes the rows whose episode ended.
    """

    def __init__(
        self, config: RNNTrajEncoderConfig | None = None, *, tstep_dim: int, max_seq_len: int
    ) -> None:
        config = config or RNNTrajEncoderConfig()
        super().__init__(config, tstep_dim=tstep_dim, max_seq_len=max_seq_len)
        self.n_layers = config.n_layers
        self.d_hidden = config.d_hidden
        self.d_output = config.d_output
        self.rnn = nn.GRU(tstep_dim, config.d_hidden, num_layers=config.n_layers, batch_first=True)
        self.out = nn.Linear(config.d_hidden, config.d_output)
        self.out_norm = normalization(config.norm, config.d_output)

    @property
    def emb_dim(self) -> int:
        """``d_output``."""
        return self.d_output

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> torch.Tensor:
        """Zero GRU state ``(n_layers, batch_size, d_hidden)``."""
        return torch.zeros(self.n_layers, batch_size, self.d_hidden, device=device)

    def reset_hidden_state(
        self, hidden_state: torch.Tensor | None, dones: np.ndarray | torch.Tensor
    ) -> torch.Tensor | None:
        """Zeroes the state of rows whose episode ended (a new tensor; the input is left as it was)."""
        if hidden_state is None:
            return None
        done_mask = dones_as_mask(dones, hidden_state.shape[1], hidden_state.device)
        return hidden_state.masked_fill(done_mask[None, :, None], 0.0)

    def forward(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Runs the GRU from ``hidden_state`` (zeros when None); returns outputs and the final state."""
        output, new_hidden = self.rnn(seq, hidden_state)
        return self.out_norm(self.out(output)), new_hidden
