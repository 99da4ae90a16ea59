"""The networks. Imported only when amago builds them."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from amago_nets.base import TstepEncoder

LSTMState = tuple[torch.Tensor, torch.Tensor]


class LSTMTrajEncoder(nn.Module):
    """LSTM over the timestep embeddings, keeping amago's trajectory-encoder contract."""

    def __init__(self, config, *, tstep_dim: int, max_seq_len: int) -> None:
        super().__init__()
        self.config = config
        self.lstm = nn.LSTM(tstep_dim, config.d_hidden, num_layers=config.n_layers, batch_first=True)

    @property
    def emb_dim(self) -> int:
        return self.config.d_hidden

    def init_hidden_state(self, batch_size: int, device) -> LSTMState:
        shape = (self.config.n_layers, batch_size, self.config.d_hidden)
        return torch.zeros(shape, device=device), torch.zeros(shape, device=device)

    def reset_hidden_state(self, hidden_state: LSTMState, dones) -> LSTMState:
        h, c = hidden_state
        mask = torch.as_tensor(np.asarray(dones) if not torch.is_tensor(dones) else dones, device=h.device)
        mask = mask.reshape(1, -1, 1).to(torch.bool)
        return h.masked_fill(mask, 0.0), c.masked_fill(mask, 0.0)

    def forward(self, seq, time_idxs, hidden_state=None):
        output, new_state = self.lstm(seq, hidden_state)
        return output, new_state


class PixelsTstepEncoder(TstepEncoder):
    """Flattens the ``image`` key (uint8, scaled to [0, 1]) and applies one Linear layer."""

    def __init__(self, config, *, obs_space, rl2_space) -> None:
        super().__init__(config, obs_space=obs_space, rl2_space=rl2_space)
        size = int(np.prod(obs_space["image"].shape)) + rl2_space.shape[0]
        self.linear = nn.Linear(size, config.d_output)

    @property
    def emb_dim(self) -> int:
        return self.config.d_output

    def inner_forward(self, obs, rl2s):
        image = obs["image"].float().flatten(start_dim=2) / 255.0
        return self.linear(torch.cat([image, rl2s], dim=-1))
