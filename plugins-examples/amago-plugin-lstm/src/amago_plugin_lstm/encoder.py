"""The LSTM trajectory encoder. Imported only when amago builds it."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from amago_plugin_lstm.specs import LSTMConfig

LSTMState = tuple[torch.Tensor, torch.Tensor]
"""(h, c), each (n_layers, batch, d_hidden)."""


class LSTMTrajEncoder(nn.Module):
    """LSTM → Linear → LayerNorm, keeping amago's trajectory-encoder contract.

    amago builds it as ``LSTMTrajEncoder(config, tstep_dim=..., max_seq_len=...)`` and calls:

    - ``forward(seq, time_idxs, None)`` on training windows (a fresh zero state each time);
    - ``init_hidden_state``, then ``forward`` one step at a time and ``reset_hidden_state`` after each step
      in rollouts, where envs finish episodes at different steps.
    """

    def __init__(self, config: LSTMConfig, *, tstep_dim: int, max_seq_len: int) -> None:
        super().__init__()
        self.config = config
        self.lstm = nn.LSTM(tstep_dim, config.d_hidden, num_layers=config.n_layers, batch_first=True)
        self.out = nn.Linear(config.d_hidden, config.d_output)
        self.norm = nn.LayerNorm(config.d_output) if config.layer_norm else nn.Identity()

    @property
    def emb_dim(self) -> int:
        """Size of the output embedding."""
        return self.config.d_output

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> LSTMState:
        """Zero (h, c) for ``batch_size`` new episodes."""
        shape = (self.config.n_layers, batch_size, self.config.d_hidden)
        return torch.zeros(shape, device=device), torch.zeros(shape, device=device)

    def reset_hidden_state(self, hidden_state: LSTMState, dones: np.ndarray | torch.Tensor) -> LSTMState:
        """Zeroes (h, c) of the rows whose episode ended; other rows keep their memory."""
        h, c = hidden_state
        done_mask = torch.as_tensor(
            np.asarray(dones) if not torch.is_tensor(dones) else dones, device=h.device
        )
        done_mask = done_mask.reshape(1, -1, 1).to(torch.bool)
        return h.masked_fill(done_mask, 0.0), c.masked_fill(done_mask, 0.0)

    def forward(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: LSTMState | None = None
    ) -> tuple[torch.Tensor, LSTMState]:
        """(B, L, tstep_dim) → (B, L, d_output), starting from ``hidden_state`` (zeros when None)."""
        output, new_state = self.lstm(seq, hidden_state)
        return self.norm(self.out(output)), new_state
