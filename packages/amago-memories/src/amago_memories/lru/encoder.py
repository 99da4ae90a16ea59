"""The deep Linear Recurrent Unit as a trajectory encoder. Imported only when amago builds it.

From A. Orvieto, S. L. Smith, A. Gu, A. Fernando, C. Gulcehre, R. Pascanu, S. De, "Resurrecting Recurrent
Neural Networks for Long Sequences", ICML 2023. One LRU, for an input ``x_t`` of size H:

- ``lambda = exp(-exp(nu_log) + i exp(theta_log))``, ``N`` complex channels, so ``|lambda| < 1`` always;
- ``h_t = lambda * h_{t-1} + gamma * (B x_t)``, ``B`` complex N x H, ``gamma`` initialised at
  ``sqrt(1 - |lambda|^2)`` so that a channel near the unit circle does not blow up its inputs;
- ``y_t = Re(C h_t) + D * x_t``, ``C`` complex H x N, ``D`` a real diagonal skip.

The recurrence is linear in ``h``, so a training window computes every ``h_t`` with the parallel scan
(:func:`amago_memories.scan.linear_scan`) and a rollout step is one multiply-add on a fixed-size state.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from amago_memories.lru.specs import LRUConfig
from amago_memories.precision import complex_recurrence_dtype, recurrence_dtype
from amago_memories.scan import linear_scan, reset_rows


class LRU(nn.Module):
    """One Linear Recurrent Unit (Orvieto et al., ICML 2023), with the paper's initialisation.

    Args:
        d_model: ``H``, size of the input and output.
        d_state: ``N``, number of complex channels.
        r_min: smallest initial ``|lambda|``.
        r_max: largest initial ``|lambda|``.
        max_phase: largest initial ``arg lambda``.
    """

    def __init__(self, d_model: int, d_state: int, r_min: float, r_max: float, max_phase: float) -> None:
        super().__init__()
        # Ring initialisation: |lambda|^2 uniform in [r_min^2, r_max^2] makes lambda uniform in area on the
        # ring; the exponential parametrisation keeps |lambda| < 1 whatever the optimiser does.
        u1, u2 = torch.rand(d_state), torch.rand(d_state)
        # Clamped away from 0 so that r_min = 0 cannot give log(0) (an infinite parameter).
        radius_sq = (u1 * (r_max**2 - r_min**2) + r_min**2).clamp(min=1e-12, max=1 - 1e-7)
        self.nu_log = nn.Parameter(torch.log(-0.5 * torch.log(radius_sq)))
        self.theta_log = nn.Parameter(torch.log(max_phase * u2.clamp(min=1e-7)))
        # The paper learns the normalisation too, starting from sqrt(1 - |lambda|^2).
        self.gamma_log = nn.Parameter(0.5 * torch.log1p(-radius_sq))
        # Glorot-like scales from the paper: B's rows see H real inputs through a complex weight, C's N channels.
        self.b_re = nn.Parameter(torch.randn(d_state, d_model) / math.sqrt(2 * d_model))
        self.b_im = nn.Parameter(torch.randn(d_state, d_model) / math.sqrt(2 * d_model))
        self.c_re = nn.Parameter(torch.randn(d_model, d_state) / math.sqrt(d_state))
        self.c_im = nn.Parameter(torch.randn(d_model, d_state) / math.sqrt(d_state))
        self.d = nn.Parameter(torch.randn(d_model))

    def eigenvalues(self, dtype: torch.dtype) -> torch.Tensor:
        """``lambda = exp(-exp(nu_log) + i exp(theta_log))``, complex, shape ``(N,)``, from real ``dtype``."""
        return torch.exp(torch.complex(-self.nu_log.to(dtype).exp(), self.theta_log.to(dtype).exp()))

    def forward(self, x: torch.Tensor, state: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` (B, L, H) from ``state`` (B, N) complex (None: zeros).

        Returns:
            ``y`` (B, L, H) and the state after the last step.
        """
        # Complex matmuls as real ones: autocast and every backend handle those, complex weights they may not.
        dtype = recurrence_dtype(x.dtype)
        gamma = self.gamma_log.to(dtype).exp()
        inputs = torch.complex(
            F.linear(x, self.b_re).to(dtype) * gamma, F.linear(x, self.b_im).to(dtype) * gamma
        )
        lam = self.eigenvalues(dtype).expand_as(inputs)
        h0 = None if state is None else state.to(inputs.dtype)
        states = linear_scan(lam, inputs, h0)
        y = F.linear(states.real.to(x.dtype), self.c_re) - F.linear(states.imag.to(x.dtype), self.c_im)
        return y + self.d * x, states[:, -1]


class LRUBlock(nn.Module):
    """The paper's deep-LRU block: ``x + Dropout(GLU(GELU(LRU(LayerNorm(x)))))``.

    Args:
        config: the encoder's config.
    """

    def __init__(self, config: LRUConfig) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(config.d_model)
        self.lru = LRU(config.d_model, config.d_state, config.r_min, config.r_max, config.max_phase)
        # GLU: one half of the projection gates the other, the channel mixing the diagonal LRU lacks.
        self.glu = nn.Linear(config.d_model, 2 * config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, state: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` (B, L, d_model) from ``state`` (B, d_state) complex (None: zeros); returns ``(y, last state)``."""
        y, final = self.lru(self.norm(x), state)
        value, gate = self.glu(F.gelu(y)).chunk(2, dim=-1)
        return x + self.dropout(value * torch.sigmoid(gate)), final


class LRUTrajEncoder(nn.Module):
    """Deep LRU (Orvieto et al., ICML 2023, "Resurrecting Recurrent Neural Networks for Long Sequences").

    ``Linear(tstep_dim, d_model)``, ``n_layers`` :class:`LRUBlock`, ``LayerNorm``. amago builds it as
    ``LRUTrajEncoder(config, tstep_dim=..., max_seq_len=...)``. The rollout state is one complex tensor
    ``(B, n_layers, d_state)``; a training window (``hidden_state=None``) starts from zeros and scans all its
    steps at once, so it equals a rollout over the same episode at any length (``max_seq_len`` does not bound
    the memory). ``time_idxs`` is not used: the state carries the order.

    Args:
        config: the validated :class:`~amago_memories.lru.specs.LRUConfig`.
        tstep_dim: size of the timestep embeddings.
        max_seq_len: the run's training window (unused, see above).
    """

    def __init__(self, config: LRUConfig, *, tstep_dim: int, max_seq_len: int) -> None:
        super().__init__()
        self.config = config
        self.inp = nn.Linear(tstep_dim, config.d_model)
        self.blocks = nn.ModuleList(LRUBlock(config) for _ in range(config.n_layers))
        self.out_norm = nn.LayerNorm(config.d_model)

    @property
    def emb_dim(self) -> int:
        """Size of the output embedding (``d_model``)."""
        return self.config.d_model

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> torch.Tensor:
        """Zero recurrent states, ``(batch_size, n_layers, d_state)`` complex."""
        real = recurrence_dtype(self.inp.weight.dtype)
        shape = (batch_size, self.config.n_layers, self.config.d_state)
        return torch.zeros(shape, dtype=complex_recurrence_dtype(real), device=device)

    def reset_hidden_state(
        self, hidden_state: torch.Tensor, dones: np.ndarray | torch.Tensor
    ) -> torch.Tensor:
        """Zeroes the states of the rows whose episode ended; the other rows keep theirs."""
        return reset_rows(hidden_state, dones)

    def forward(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, L, tstep_dim) to (B, L, d_model), from ``hidden_state`` (None: a fresh start).

        Returns:
            The outputs and the state after the last step, ``(B, n_layers, d_state)`` complex.
        """
        x, finals = self.inp(seq), []
        for layer, block in enumerate(self.blocks):
            x, final = block(x, None if hidden_state is None else hidden_state[:, layer])
            finals.append(final)
        return self.out_norm(x), torch.stack(finals, dim=1)
