"""The ``mingru`` trajectory encoder: deep minGRU.

From Feng, Tung, Ahmed, Bengio and Hajimirsadeghi, "Were RNNs All We Needed?" (2024). A minGRU drops the GRU's
dependence of the gates on the previous state::

    z_t = sigmoid(Linear_z(x_t))                      update gate
    h~_t = g(Linear_h(x_t))                           candidate, g(x) = x + 0.5 (x >= 0), sigmoid(x) (x < 0)
    h_t = (1 - z_t) * h_{t-1} + z_t * h~_t

which is the linear recurrence ``h_t = a_t h_{t-1} + b_t`` with ``a = 1 - z``, ``b = z h~``: a training window
evaluates every step at once with a log-depth scan (:func:`amago_memories.scan.linear_scan`) and a rollout
step updates a fixed-size state.

Imported only when a run builds the encoder (it imports torch).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from amago_memories.mingru.specs import MinGRUConfig
from amago_memories.precision import recurrence_dtype
from amago_memories.scan import linear_scan, reset_rows


def candidate_activation(x: torch.Tensor) -> torch.Tensor:
    """The paper's ``g``: ``x + 0.5`` for ``x >= 0``, ``sigmoid(x)`` below; continuous, positive, unbounded above.

    Positive candidates keep every ``h_t`` positive (a convex mix of positive numbers), which is what lets the
    paper's log-space form take ``log h``; the linear-space scan used here does not need it but keeps ``g`` so
    that the network is the paper's.
    """
    return torch.where(x >= 0, x + 0.5, torch.sigmoid(x))


class MinGRU(nn.Module):
    """One minGRU layer (Feng et al. 2024, "Were RNNs All We Needed?"), parallel over time.

    The parallel path is ``linear_scan(1 - z, z * h~, h0)`` in linear space rather than the paper's log-space
    (Heinsen) scan. The log-space scan computes ``h_t = exp(A_t + logcumsumexp(log b - A)_t)`` with
    ``A_t = sum_{s<=t} log(1 - z_s)``: ``A`` grows linearly with the window and cancels against the
    ``logcumsumexp``, so its error grows with the window too (measured over 1024 steps against fp64: 2e-4
    relative in fp32, useless in bf16). The linear scan only multiplies numbers in (0, 1) and adds positive
    ones, with a log-depth chain of roundings (4e-7 in fp32 over the same steps). It runs in fp32 even under
    bf16 autocast, since bf16 rounds a ``1 - z`` near 1 to 1 and the state would stop forgetting.
    """

    def __init__(self, d_in: int, d_hidden: int) -> None:
        super().__init__()
        # One matmul gives both the gate and the candidate pre-activations.
        self.to_gates = nn.Linear(d_in, 2 * d_hidden)

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Runs the layer over ``x`` (B, L, d_in) from ``h0`` (B, d_hidden; None: zeros).

        Returns:
            The states of every step (B, L, d_hidden) in ``x``'s dtype, and the last state (B, d_hidden) in the
            recurrence's dtype (at least fp32), which a rollout carries to its next step.
        """
        gate_pre, cand_pre = self.to_gates(x).chunk(2, dim=-1)
        dtype = recurrence_dtype(gate_pre.dtype)
        with torch.autocast(device_type=x.device.type, enabled=False):
            gate_pre = gate_pre.to(dtype)
            update = torch.sigmoid(gate_pre)
            # sigmoid(-k) is 1 - sigmoid(k) without the cancellation of 1 - z when z is close to 1.
            keep = torch.sigmoid(-gate_pre)
            states = linear_scan(
                keep, update * candidate_activation(cand_pre.to(dtype)), None if h0 is None else h0.to(dtype)
            )
        return states.to(x.dtype), states[:, -1]


class MinGRUBlock(nn.Module):
    """A block of the paper's deep minGRU: ``x + minGRU(norm(x))`` (projected to d_model), then ``x + MLP(norm(x))``."""

    def __init__(self, d_model: int, d_hidden: int, mlp_ratio: int, dropout: float) -> None:
        super().__init__()
        self.norm_rnn = nn.LayerNorm(d_model)
        self.rnn = MinGRU(d_model, d_hidden)
        # Always projected (not only when expanded): the minGRU's states are positive, and the projection
        # lets the residual stream receive signed updates.
        self.rnn_out = nn.Linear(d_hidden, d_model)
        self.norm_mlp = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(), nn.Linear(mlp_ratio * d_model, d_model)
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` (B, L, d_model) from the layer state ``h0`` → the block's output and its last state."""
        states, last = self.rnn(self.norm_rnn(x), h0)
        x = x + self.dropout(self.rnn_out(states))
        x = x + self.dropout(self.mlp(self.norm_mlp(x)))
        return x, last


class MinGRUTrajEncoder(nn.Module):
    """Deep minGRU (Feng et al. 2024, "Were RNNs All We Needed?") over the timestep embeddings.

    Linear input projection to ``d_model`` → ``n_layers`` :class:`MinGRUBlock` → LayerNorm. Training windows
    (``hidden_state=None``) run each layer as one parallel scan from a zero state; rollouts carry each layer's
    last state, ``(B, n_layers, d_hidden)``, so a step costs the same however long the episode has run.
    ``time_idxs`` are not used: the recurrence orders the steps.
    """

    def __init__(self, config: MinGRUConfig | None = None, *, tstep_dim: int, max_seq_len: int) -> None:
        super().__init__()
        self.config = config = config or MinGRUConfig()
        self.inp = nn.Linear(tstep_dim, config.d_model)
        self.blocks = nn.ModuleList(
            MinGRUBlock(config.d_model, config.d_hidden, config.mlp_ratio, config.dropout)
            for _ in range(config.n_layers)
        )
        self.out_norm = nn.LayerNorm(config.d_model)

    @property
    def emb_dim(self) -> int:
        """``d_model``."""
        return self.config.d_model

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> torch.Tensor:
        """Zero states ``(batch_size, n_layers, d_hidden)``, the paper's ``h_0 = 0``."""
        dtype = recurrence_dtype(self.inp.weight.dtype)
        shape = (batch_size, self.config.n_layers, self.config.d_hidden)
        return torch.zeros(shape, device=device, dtype=dtype)

    def reset_hidden_state(
        self, hidden_state: torch.Tensor | None, dones: np.ndarray | torch.Tensor
    ) -> torch.Tensor | None:
        """Zeroes the states of the rows whose episode ended (a new tensor; the others keep their memory)."""
        if hidden_state is None:
            return None
        return reset_rows(hidden_state, dones)

    def forward(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Encodes ``seq`` (B, L, tstep_dim) from ``hidden_state`` (None: a fresh start).

        Returns:
            The outputs (B, L, d_model) and the state after the last step, ``(B, n_layers, d_hidden)``.
        """
        x = self.inp(seq)
        last_states = []
        for layer, block in enumerate(self.blocks):
            x, last = block(x, None if hidden_state is None else hidden_state[:, layer])
            last_states.append(last)
        return self.out_norm(x), torch.stack(last_states, dim=1)
