"""The ``mamba`` trajectory encoder: pre-norm residual Mamba blocks, in pure PyTorch with optional CUDA kernels."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from amago_nets.base import TrajEncoder, dones_as_mask
from amago_nets.layers import normalization
from amago_nets.selective_scan import (
    mamba_kernel_available,
    scan_chunked,
    scan_kernel,
    scan_sequential,
    scan_step,
)
from amago_nets.specs import MambaTrajEncoderConfig


@dataclass(frozen=True)
class MambaState:
    """Rollout state of every layer: the causal convolution's last inputs and the SSM state.

    Attributes:
        conv: (n_layers, B, d_inner, d_conv - 1) last pre-convolution inputs, oldest first.
        ssm: (n_layers, B, d_inner, d_state).
    """

    conv: torch.Tensor
    ssm: torch.Tensor

    def reset(self, dones: np.ndarray | torch.Tensor) -> MambaState:
        """Zeroes both states of the rows where ``dones`` is True (new tensors)."""
        done_mask = dones_as_mask(dones, self.ssm.shape[1], self.ssm.device)[None, :, None, None]
        return MambaState(self.conv.masked_fill(done_mask, 0.0), self.ssm.masked_fill(done_mask, 0.0))


class MambaMixer(nn.Module):
    """One Mamba (S6) mixer: in-projection → causal depthwise conv → selective scan, gated → out-projection.

    Parameter names and initialisation follow the Mamba paper's reference block, so step sizes start in
    [0.001, 0.1] and ``A`` holds ``-1..-d_state`` per channel.
    """

    def __init__(self, config: MambaTrajEncoderConfig) -> None:
        super().__init__()
        d_model, d_state = config.d_model, config.d_state
        self.d_inner = config.expand * d_model
        self.d_state = d_state
        self.d_conv = config.d_conv
        self.dt_rank = config.dt_rank or math.ceil(d_model / 16)
        self.scan_mode = config.scan
        self.chunk_size = config.chunk_size
        self.use_kernels = config.use_kernels
        self.in_proj = nn.Linear(d_model, 2 * self.d_inner, bias=False)
        self.conv1d = nn.Conv1d(self.d_inner, self.d_inner, config.d_conv, groups=self.d_inner, bias=True)
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True)
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=False)
        self._init_step_sizes()
        a_init = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(self.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(a_init))
        self.D = nn.Parameter(torch.ones(self.d_inner))

    def _init_step_sizes(self, dt_min: float = 1e-3, dt_max: float = 0.1) -> None:
        nn.init.uniform_(self.dt_proj.weight, -(self.dt_rank**-0.5), self.dt_rank**-0.5)
        dt = torch.exp(torch.rand(self.d_inner) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        dt = dt.clamp(min=1e-4)
        with torch.no_grad():
            # Inverse of softplus, so that softplus(bias) == dt at initialisation.
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))

    def _ssm_inputs(self, xc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        dt, B, C = self.x_proj(xc).split((self.dt_rank, self.d_state, self.d_state), dim=-1)
        return F.softplus(self.dt_proj(dt)), B, C

    def forward(
        self, x: torch.Tensor, conv_state: torch.Tensor | None, ssm_state: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Runs (B, L, d_model) from the given states (zeros when None).

        Returns:
            The output (B, L, d_model), the new conv state and the new SSM state.
        """
        batch, length, _ = x.shape
        xi, z = self.in_proj(x).chunk(2, dim=-1)
        xi_t = xi.transpose(1, 2)  # (B, d_inner, L)
        if conv_state is None:
            conv_state = xi_t.new_zeros(batch, self.d_inner, self.d_conv - 1)
        padded = torch.cat((conv_state, xi_t), dim=-1)
        new_conv_state = padded[:, :, padded.shape[-1] - (self.d_conv - 1) :]
        A = -torch.exp(self.A_log.float())
        if length == 1:
            # One rollout step: the convolution is a dot product with the stored inputs.
            conv_bias = cast(torch.Tensor, self.conv1d.bias)  # built with bias=True
            xc = F.silu((padded * self.conv1d.weight[:, 0]).sum(-1) + conv_bias)
            dt, B, C = self._ssm_inputs(xc)
            h = ssm_state if ssm_state is not None else xc.new_zeros(batch, self.d_inner, self.d_state)
            y, new_ssm = scan_step(xc, dt, A, B, C, self.D, h)
            y = y.unsqueeze(1)
        else:
            xc = F.silu(self.conv1d(padded)).transpose(1, 2)  # (B, L, d_inner)
            dt, B, C = self._ssm_inputs(xc)
            if ssm_state is None and self.use_kernels and x.is_cuda and mamba_kernel_available():
                y, new_ssm = scan_kernel(xc, dt, A, B, C, self.D)
            elif self.scan_mode == "sequential" or (self.scan_mode == "auto" and not x.is_cuda):
                y, new_ssm = scan_sequential(xc, dt, A, B, C, self.D, ssm_state)
            else:
                y, new_ssm = scan_chunked(xc, dt, A, B, C, self.D, ssm_state, self.chunk_size)
        return self.out_proj(y * F.silu(z)), new_conv_state, new_ssm


class MambaTrajEncoder(TrajEncoder):
    """Linear input → pre-norm residual Mamba blocks → output norm.

    Training windows start from zero states; rollouts carry each layer's conv and SSM state without
    truncation (:class:`MambaState`), and ``reset_hidden_state`` zeroes the rows whose episode ended.
    ``forward`` accepts a state with any L, so a long sequence may also be fed in pieces.
    """

    def __init__(
        self, config: MambaTrajEncoderConfig | None = None, *, tstep_dim: int, max_seq_len: int
    ) -> None:
        config = config or MambaTrajEncoderConfig()
        super().__init__(config, tstep_dim=tstep_dim, max_seq_len=max_seq_len)
        self.d_model = config.d_model
        self.inp = nn.Linear(tstep_dim, config.d_model)
        self.norms = nn.ModuleList(normalization(config.norm, config.d_model) for _ in range(config.n_layers))
        self.mixers = nn.ModuleList(MambaMixer(config) for _ in range(config.n_layers))
        self.out_norm = normalization(config.norm, config.d_model)

    @property
    def emb_dim(self) -> int:
        """``d_model``."""
        return self.d_model

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> MambaState:
        """Zero conv and SSM states for every layer."""
        mixer = cast(MambaMixer, self.mixers[0])  # ModuleList indexing is typed as a plain Module
        n_layers = len(self.mixers)
        return MambaState(
            conv=torch.zeros(n_layers, batch_size, mixer.d_inner, mixer.d_conv - 1, device=device),
            ssm=torch.zeros(n_layers, batch_size, mixer.d_inner, mixer.d_state, device=device),
        )

    def reset_hidden_state(
        self, hidden_state: MambaState | None, dones: np.ndarray | torch.Tensor
    ) -> MambaState | None:
        """Zeroes the states of rows whose episode ended."""
        if hidden_state is None:
            return None
        return hidden_state.reset(dones)

    def forward(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: MambaState | None = None
    ) -> tuple[torch.Tensor, MambaState]:
        """Runs the blocks from ``hidden_state`` (zeros when None); returns outputs and the new state."""
        x = self.inp(seq)
        conv_states, ssm_states = [], []
        for index, (norm, mixer) in enumerate(zip(self.norms, self.mixers, strict=True)):
            conv = None if hidden_state is None else hidden_state.conv[index]
            ssm = None if hidden_state is None else hidden_state.ssm[index]
            mixed, conv, ssm = mixer(norm(x), conv, ssm)
            x = x + mixed
            conv_states.append(conv)
            ssm_states.append(ssm)
        return self.out_norm(x), MambaState(torch.stack(conv_states), torch.stack(ssm_states))
