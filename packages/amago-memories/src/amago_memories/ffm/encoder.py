"""Fast and Forgetful Memory as a trajectory encoder. Imported only when amago builds it.

From S. Morad, R. Kortvelesy, S. Liwicki, A. Prorok, "Reinforcement Learning with Fast and Forgetful Memory",
NeurIPS 2023. One FFM cell, for an input ``x_t``:

- input gate: ``x~_t = l1(x_t) * sigmoid(l2(x_t))`` (``d_memory`` features);
- aggregator: ``S_t = gamma * S_{t-1} + x~_t 1_c^T`` with ``gamma = exp(-|alpha| + i omega)``, ``alpha`` over
  the memory axis and ``omega`` over the context axis, so ``S_t`` is ``d_memory x d_context`` complex;
- read-out: ``z_t = l3([Re S_t, Im S_t])`` (flattened), output gate ``o_t = sigmoid(l4(x_t))``;
- gated skip: ``y_t = LayerNorm(z_t) * o_t + l5(x_t) * (1 - o_t)``.

The aggregator is linear in ``S``, so a training window computes every ``S_t`` with the parallel scan
(:func:`amago_memories.scan.linear_scan`) and a rollout step is one multiply-add on a fixed-size state.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from amago_memories.ffm.specs import FFMConfig
from amago_memories.precision import complex_recurrence_dtype, recurrence_dtype
from amago_memories.scan import linear_scan, reset_rows


class FFMCell(nn.Module):
    """One FFM cell (Morad et al., NeurIPS 2023, "Fast and Forgetful Memory"): gates, aggregator, read-out.

    Args:
        d_input: size of the input features.
        d_output: size of the output (``l3``, ``l4`` and ``l5`` map to it).
        d_memory: ``m``, features of the aggregator.
        d_context: ``c``, frequencies per feature.
        config: the encoder's config (the initialisation ranges).
    """

    def __init__(self, d_input: int, d_output: int, d_memory: int, d_context: int, config: FFMConfig) -> None:
        super().__init__()
        self.d_output, self.d_memory, self.d_context = d_output, d_memory, d_context
        # l1, l2 (input gate), l4 (output gate) and l5 (skip) read the same input: one matmul for all four.
        self.pre = nn.Linear(d_input, 2 * d_memory + 2 * d_output)
        self.mix = nn.Linear(2 * d_memory * d_context, d_output)  # l3
        self.norm = nn.LayerNorm(d_output)
        # Paper's initialisation: each memory feature forgets an input down to `forgotten_at` after its own
        # horizon, the horizons spread linearly from 1 step to `retention_horizon`, so the cell starts with
        # short and long memories side by side; the frequencies are 2 pi / period over a linear period range.
        horizons = torch.linspace(1.0, config.retention_horizon, d_memory)
        self.alpha = nn.Parameter(-math.log(config.forgotten_at) / horizons)
        periods = torch.linspace(config.min_period, config.max_period, d_context)
        self.omega = nn.Parameter(2 * math.pi / periods)

    def decay(self, dtype: torch.dtype) -> torch.Tensor:
        """``gamma = exp(-|alpha| + i omega)``, complex, shape ``(d_memory, d_context)``, from real ``dtype``."""
        alpha = self.alpha.to(dtype).abs().unsqueeze(1).expand(self.d_memory, self.d_context)
        omega = self.omega.to(dtype).unsqueeze(0).expand(self.d_memory, self.d_context)
        return torch.exp(torch.complex(-alpha, omega))

    def forward(self, x: torch.Tensor, state: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` (B, L, d_input) from ``state`` (B, d_memory, d_context) complex (None: zeros).

        Returns:
            ``y`` (B, L, d_output) and the state after the last step.
        """
        value, gate_in, gate_out, skip = self.pre(x).split(
            [self.d_memory, self.d_memory, self.d_output, self.d_output], dim=-1
        )
        dtype = recurrence_dtype(value.dtype)
        x_tilde = (value * torch.sigmoid(gate_in)).to(dtype)
        # x~ enters every context channel alike; the channels differ only in how they rotate while decaying.
        inputs = torch.complex(x_tilde, torch.zeros_like(x_tilde)).unsqueeze(-1)
        gamma = self.decay(dtype).expand(*x.shape[:2], self.d_memory, self.d_context)
        h0 = None if state is None else state.to(inputs.dtype)
        states = linear_scan(gamma, inputs, h0)
        z = self.mix(torch.cat([states.real, states.imag], dim=-1).flatten(-2).to(x.dtype))
        out_gate = torch.sigmoid(gate_out)
        y = self.norm(z) * out_gate + skip * (1 - out_gate)
        return y, states[:, -1]


class FFMTrajEncoder(nn.Module):
    """Stacked FFM cells (Morad et al., NeurIPS 2023, "Reinforcement Learning with Fast and Forgetful Memory").

    amago builds it as ``FFMTrajEncoder(config, tstep_dim=..., max_seq_len=...)``. The rollout state is one
    complex tensor ``(B, n_layers, d_memory, d_context)``; a training window (``hidden_state=None``) starts
    from zeros and scans all its steps at once, so it equals a rollout over the same episode at any length
    (``max_seq_len`` does not bound the memory). ``time_idxs`` is not used: the state carries the order.

    Args:
        config: the validated :class:`~amago_memories.ffm.specs.FFMConfig`.
        tstep_dim: size of the timestep embeddings.
        max_seq_len: the run's training window (unused, see above).
    """

    def __init__(self, config: FFMConfig, *, tstep_dim: int, max_seq_len: int) -> None:
        super().__init__()
        self.config = config
        self.cells = nn.ModuleList(
            FFMCell(
                tstep_dim if layer == 0 else config.d_model,
                config.d_model,
                config.d_memory,
                config.d_context,
                config,
            )
            for layer in range(config.n_layers)
        )

    @property
    def emb_dim(self) -> int:
        """Size of the output embedding (``d_model``)."""
        return self.config.d_model

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> torch.Tensor:
        """Zero aggregator states, ``(batch_size, n_layers, d_memory, d_context)`` complex."""
        real = recurrence_dtype(next(self.parameters()).dtype)
        shape = (batch_size, self.config.n_layers, self.config.d_memory, self.config.d_context)
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
            The outputs and the state after the last step, ``(B, n_layers, d_memory, d_context)`` complex.
        """
        x, finals = seq, []
        for layer, cell in enumerate(self.cells):
            x, final = cell(x, None if hidden_state is None else hidden_state[:, layer])
            finals.append(final)
        return x, torch.stack(finals, dim=1)
