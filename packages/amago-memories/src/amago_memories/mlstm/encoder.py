"""The ``mlstm`` trajectory encoder: xLSTM's matrix-memory LSTM.

From Beck, Pöppel, Spanring, Auer, Prudnikova, Kopp, Klambauer, Brandstetter and Hochreiter, "xLSTM: Extended
Long Short-Term Memory" (NeurIPS 2024). Per head, with ``k`` scaled by ``1/sqrt(head_dim)``::

    C_t = f_t C_{t-1} + i_t v_t k_t^T          matrix memory
    n_t = f_t n_{t-1} + i_t k_t                normaliser
    h~_t = C_t q_t / max(|n_t^T q_t|, 1)

with an exponential input gate ``i_t = exp(i~_t)`` and a sigmoid (or exponential) forget gate. Exponentials
overflow, so both forms carry a stabiliser ``m_t`` and keep ``C_t exp(-m_t)``, ``n_t exp(-m_t)`` instead:

- recurrent (rollout steps): ``m_t = max(log f_t + m_{t-1}, i~_t)``; the stored states are scaled by
  ``exp(log f_t + m_{t-1} - m_t)`` and the new outer product by ``exp(i~_t - m_t)``;
- parallel (training windows): ``log D_ij = sum_{j<s<=i} log f_s + i~_j`` (j <= i), ``m_i = max_j log D_ij``;
  ``h~_i = sum_j S_ij v_j / max(|sum_j S_ij|, exp(-m_i))`` with ``S_ij = (q_i . k_j) exp(log D_ij - m_i)``.

Both compute the same function, not only approximately: unrolling the recurrent ``m_t`` gives exactly the
row max of ``log D`` when a fresh state starts from ``m_0 = -inf`` (no memory yet, so no weight to exceed), and
dividing ``max(|n_t^T q_t|, 1)`` by ``exp(m_t)`` is ``max(|n'_t^T q_t|, exp(-m_t))`` in both. A fresh state with
``m_0 = 0``, as is sometimes written, would put a phantom term ``sum log f`` into the max of the rollout only.

Imported only when a run builds the encoder (it imports torch).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from amago_memories.mlstm.specs import MLSTMConfig
from amago_memories.precision import recurrence_dtype
from amago_memories.scan import reset_rows

CellState = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""One layer's stabilised memory ``(C', n', m)``: C' (B, H, d, d) indexed [value, key], n' (B, H, d), m (B, H)."""

MLSTMState = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
"""The rollout state ``(C', n', m, conv)``, batch first, stacked over layers: C' (B, n_layers, H, d, d),
n' (B, n_layers, H, d), m (B, n_layers, H) and the conv inputs (B, n_layers, conv_kernel - 1, d_inner)."""

_NORMALISER_FLOOR = 1e-12
"""Smallest denominator: ``max(|n'^T q|, exp(-m))`` is 0 only if ``exp(-m)`` underflows (m > 88 in fp32) and
``n'^T q`` is exactly 0; the floor keeps that case finite. Both forms use it, so they stay equal."""


def _normaliser(den: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """``max(|n'^T q|, exp(-m))``: the paper's ``max(|n^T q|, 1)`` in the units of the stabilised states.

    ``exp(-m)`` is capped below the dtype's overflow: past it (m < -44 in fp32) the stabilised numerator is
    smaller than the cap's inverse by far, the output is ~0 either way, and the cap keeps ``exp``'s gradient
    finite (an ``inf`` there times a zero upstream gradient would be NaN).
    """
    cap = math.log(torch.finfo(m.dtype).max) / 2
    return torch.maximum(den.abs(), torch.exp(torch.clamp(-m, max=cap))).clamp_min(_NORMALISER_FLOOR)


def causal_log_decay(log_f: torch.Tensor) -> torch.Tensor:
    """``[..., i, j] = sum_{j < s <= i} log f_s`` for ``j <= i`` and ``-inf`` above the diagonal.

    Each entry is summed over its own span (a cumulative sum down the columns of a masked copy), not as a
    difference ``F_i - F_j`` of one cumulative sum: over a long window ``F`` reaches hundreds, and the
    difference of two such numbers loses digits in fp32 (1e-4 of the decay at ``|F| ~ 1e3``) exactly where
    the decay is near 1 and matters most.

    Args:
        log_f: log forget gates, shape ``(..., L)``.

    Returns:
        Shape ``(..., L, L)``.
    """
    length = log_f.shape[-1]
    ones = torch.ones(length, length, dtype=torch.bool, device=log_f.device)
    # [s, j]: step s's log f counts towards column j when s > j.
    counted = log_f.unsqueeze(-1).expand(*log_f.shape, length).masked_fill(~torch.tril(ones, -1), 0.0)
    return torch.cumsum(counted, dim=-2).masked_fill(~torch.tril(ones), float("-inf"))


def mlstm_parallel(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    i_pre: torch.Tensor,
    log_f: torch.Tensor,
    state: CellState | None = None,
) -> tuple[torch.Tensor, CellState]:
    """The mLSTM cell over a whole window at once (the paper's parallel form, O(L²) time and memory).

    Args:
        q: queries (B, H, L, d).
        k: keys (B, H, L, d), already scaled by ``1/sqrt(d)``.
        v: values (B, H, L, d).
        i_pre: input gate pre-activations ``i~`` (B, H, L); the gate is ``exp(i~)``.
        log_f: log forget gates (B, H, L).
        state: the memory before the window (None: empty, ``m = -inf``). Its contribution to step ``t`` is
            weighted by ``exp(sum_{s<=t} log f_s + m_0)`` like a key in front of the window.

    Returns:
        ``h~`` (B, H, L, d) and the stabilised memory after the window's last step.
    """
    log_d = causal_log_decay(log_f) + i_pre.unsqueeze(-2)
    m = log_d.amax(dim=-1)
    log_w0: torch.Tensor | None = None
    if state is not None:
        log_w0 = torch.cumsum(log_f, dim=-1) + state[2].unsqueeze(-1)
        m = torch.maximum(m, log_w0)
    decay = torch.exp(log_d - m.unsqueeze(-1))
    scores = (q @ k.transpose(-1, -2)) * decay
    num = scores @ v
    den = scores.sum(dim=-1)
    last = decay[..., -1, :]
    c_last = torch.einsum("bhj,bhje,bhjd->bhed", last, v, k)
    n_last = torch.einsum("bhj,bhjd->bhd", last, k)
    if state is not None and log_w0 is not None:
        c0, n0, _ = state
        w0 = torch.exp(log_w0 - m)
        num = num + w0.unsqueeze(-1) * torch.einsum("bhed,bhld->bhle", c0, q)
        den = den + w0 * torch.einsum("bhd,bhld->bhl", n0, q)
        c_last = c_last + w0[..., -1, None, None] * c0
        n_last = n_last + w0[..., -1, None] * n0
    return num / _normaliser(den, m).unsqueeze(-1), (c_last, n_last, m[..., -1])


def mlstm_step(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    i_pre: torch.Tensor,
    log_f: torch.Tensor,
    state: CellState,
) -> tuple[torch.Tensor, CellState]:
    """One step of the mLSTM cell (the paper's stabilised recurrent form); O(1) in the episode's length.

    Args:
        q: queries (B, H, d).
        k: keys (B, H, d), already scaled by ``1/sqrt(d)``.
        v: values (B, H, d).
        i_pre: input gate pre-activations (B, H).
        log_f: log forget gates (B, H).
        state: the memory before the step (``m = -inf`` for a fresh one).

    Returns:
        ``h~`` (B, H, d) and the memory after the step.
    """
    c, n, m = state
    m_new = torch.maximum(log_f + m, i_pre)
    keep = torch.exp(log_f + m - m_new)
    write = torch.exp(i_pre - m_new)
    c = keep[..., None, None] * c + write[..., None, None] * (v.unsqueeze(-1) * k.unsqueeze(-2))
    n = keep[..., None] * n + write[..., None] * k
    num = torch.einsum("bhed,bhd->bhe", c, q)
    den = (n * q).sum(dim=-1)
    return num / _normaliser(den, m_new).unsqueeze(-1), (c, n, m_new)


class CellInputs(NamedTuple):
    """What a block feeds its cell, and what its output needs again."""

    q: torch.Tensor
    """Queries (B, H, L, d), in the cell's dtype."""
    k: torch.Tensor
    """Keys (B, H, L, d), scaled by ``1/sqrt(d)``, in the cell's dtype."""
    v: torch.Tensor
    """Values (B, H, L, d), in the cell's dtype."""
    i_pre: torch.Tensor
    """Input gate pre-activations (B, H, L)."""
    log_f: torch.Tensor
    """Log forget gates (B, H, L)."""
    x_conv: torch.Tensor
    """The convolved branch (B, L, d_inner), for the learnable skip."""
    z: torch.Tensor
    """The output-gate branch (B, L, d_inner)."""


class MLSTMBlock(nn.Module):
    """The paper's mLSTM block (Beck et al. 2024, xLSTM, Fig. 10), pre-norm and residual.

    ``x + Down(( HeadNorm(mLSTM(q, k, v)) + skip * x_c ) * SiLU(z))`` where ``(x_m, z) = Up(LayerNorm(x))``,
    ``x_c = SiLU(CausalConv(x_m))``, ``q, k`` come from ``x_c`` and ``v`` from ``x_m``, and the gates from
    ``(q, k, v)``. ``SiLU(z)`` is the block's output gate ``o_t`` (the paper moves the cell's sigmoid output gate
    out of the cell into this branch). Deviation: ``q, k, v`` are dense projections, not the paper's
    block-diagonal ones (blocks of 4), which at RL widths save little and cost expressiveness.
    """

    def __init__(self, config: MLSTMConfig) -> None:
        super().__init__()
        d_inner, heads = config.d_inner, config.n_heads
        self.n_heads, self.head_dim = heads, config.head_dim
        self.conv_kernel = config.conv_kernel
        self.exp_forget = config.forget_gate == "exp"
        self.norm = nn.LayerNorm(config.d_model)
        self.up = nn.Linear(config.d_model, 2 * d_inner)
        # The block's input for the conv is padded with its own last inputs (zeros at an episode's start), so
        # the conv has no padding of its own.
        self.conv = (
            nn.Conv1d(d_inner, d_inner, config.conv_kernel, groups=d_inner) if config.conv_kernel else None
        )
        self.q = nn.Linear(d_inner, d_inner)
        self.k = nn.Linear(d_inner, d_inner)
        self.v = nn.Linear(d_inner, d_inner)
        self.gates = nn.Linear(3 * d_inner, 2 * heads)
        # The paper's gate initialisation: gates start input-independent, forget gates open (sigmoid(3..6),
        # the memory starts long) and spread over heads so that heads start at different time scales.
        nn.init.zeros_(self.gates.weight)
        with torch.no_grad():
            nn.init.normal_(self.gates.bias[:heads], std=0.1)
            open_forget = torch.linspace(3.0, 6.0, heads)
            # An exp forget gate starts at the same f as the sigmoid one: a bias of 3..6 there would be
            # f = e^3..e^6, a memory that grows 20-400x per step from the first update on.
            self.gates.bias[heads:] = F.logsigmoid(open_forget) if self.exp_forget else open_forget
        self.head_norm_weight = nn.Parameter(torch.ones(d_inner))
        self.skip = nn.Parameter(torch.ones(d_inner))
        self.down = nn.Linear(d_inner, config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def features(self, x: torch.Tensor, conv_inputs: torch.Tensor | None) -> tuple[CellInputs, torch.Tensor]:
        """The cell's inputs for the normed block input ``x`` (B, L, d_model).

        Args:
            x: the block input after its LayerNorm.
            conv_inputs: the last ``conv_kernel - 1`` up-projected inputs before ``x`` (None: an episode's
                start, zeros).

        Returns:
            The cell inputs and the conv inputs to carry to the next call.
        """
        x_m, z = self.up(x).chunk(2, dim=-1)
        batch, length, d_inner = x_m.shape
        if self.conv is None:
            x_conv, carried = F.silu(x_m), x_m.new_zeros(batch, 0, d_inner)
        else:
            if conv_inputs is None:
                conv_inputs = x_m.new_zeros(batch, self.conv_kernel - 1, d_inner)
            padded = torch.cat([conv_inputs.to(x_m.dtype), x_m], dim=1)
            x_conv = F.silu(self.conv(padded.transpose(1, 2)).transpose(1, 2))
            carried = padded[:, padded.shape[1] - (self.conv_kernel - 1) :]
        q, k, v = self.q(x_conv), self.k(x_conv), self.v(x_m)
        i_pre, f_pre = self.gates(torch.cat([q, k, v], dim=-1)).chunk(2, dim=-1)
        dtype = recurrence_dtype(q.dtype)

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.to(dtype).reshape(batch, length, self.n_heads, self.head_dim).transpose(1, 2)

        f_pre = f_pre.to(dtype).transpose(1, 2)
        log_f = f_pre if self.exp_forget else F.logsigmoid(f_pre)
        inputs = CellInputs(
            q=heads(q),
            k=heads(k) / math.sqrt(self.head_dim),
            v=heads(v),
            i_pre=i_pre.to(dtype).transpose(1, 2),
            log_f=log_f,
            x_conv=x_conv,
            z=z,
        )
        return inputs, carried

    def cell(self, inputs: CellInputs, state: CellState | None) -> tuple[torch.Tensor, CellState]:
        """``h~`` (B, H, L, d) and the memory after the last step: a rollout step (L = 1 from a state) uses the
        recurrent form, anything else the parallel one. Runs without autocast (see ``_compute_dtype``)."""
        q, k, v, i_pre, log_f = inputs.q, inputs.k, inputs.v, inputs.i_pre, inputs.log_f
        with torch.autocast(device_type=q.device.type, enabled=False):
            if state is None:
                return mlstm_parallel(q, k, v, i_pre, log_f)
            c, n, m = (s.to(q.dtype) for s in state)
            if q.shape[2] == 1:
                h, new_state = mlstm_step(
                    q[:, :, 0], k[:, :, 0], v[:, :, 0], i_pre[..., 0], log_f[..., 0], (c, n, m)
                )
                return h.unsqueeze(2), new_state
            return mlstm_parallel(q, k, v, i_pre, log_f, (c, n, m))

    def readout(self, h: torch.Tensor, inputs: CellInputs) -> torch.Tensor:
        """The block's residual update (B, L, d_model) from the cell's ``h~`` (B, H, L, d)."""
        batch, _, length, _ = h.shape
        # Per-head LayerNorm (the paper's group norm): each head's memory has its own scale.
        normed = F.layer_norm(h, (self.head_dim,)).transpose(1, 2).reshape(batch, length, -1)
        normed = normed.to(inputs.z.dtype) * self.head_norm_weight
        out = (normed + self.skip * inputs.x_conv) * F.silu(inputs.z)
        return self.dropout(self.down(out))

    def forward(
        self, x: torch.Tensor, state: tuple[torch.Tensor, ...] | None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """``x`` (B, L, d_model) from one layer's ``(C', n', m, conv)`` (None: fresh) → output and new state."""
        inputs, carried = self.features(self.norm(x), None if state is None else state[3])
        cell_state: CellState | None = None if state is None else (state[0], state[1], state[2])
        h, new_cell = self.cell(inputs, cell_state)
        return x + self.readout(h, inputs), (*new_cell, carried)


class MLSTMTrajEncoder(nn.Module):
    """Stacked mLSTM blocks (Beck et al. 2024, "xLSTM: Extended Long Short-Term Memory").

    Linear input projection to ``d_model`` → ``n_layers`` :class:`MLSTMBlock` → LayerNorm. Training windows
    (``hidden_state=None``) use the cell's parallel form: O(L²) time and memory per window, like attention,
    which is fine for RL windows of at most a few hundred steps and needs no Python loop over time. Rollouts
    carry each layer's stabilised memory and its last ``conv_kernel - 1`` conv inputs (:data:`MLSTMState`), so
    a step costs the same however long the episode has run. ``time_idxs`` are not used: the gates order the
    steps.
    """

    def __init__(self, config: MLSTMConfig | None = None, *, tstep_dim: int, max_seq_len: int) -> None:
        super().__init__()
        self.config = config = config or MLSTMConfig()
        self.inp = nn.Linear(tstep_dim, config.d_model)
        self.blocks = nn.ModuleList(MLSTMBlock(config) for _ in range(config.n_layers))
        self.out_norm = nn.LayerNorm(config.d_model)

    @property
    def emb_dim(self) -> int:
        """``d_model``."""
        return self.config.d_model

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> MLSTMState:
        """Empty memories: ``C' = 0``, ``n' = 0``, ``m = -inf`` (nothing stored yet) and zero conv inputs."""
        c = self.config
        dtype = recurrence_dtype(self.inp.weight.dtype)
        rows = (batch_size, c.n_layers)
        return (
            torch.zeros(*rows, c.n_heads, c.head_dim, c.head_dim, device=device, dtype=dtype),
            torch.zeros(*rows, c.n_heads, c.head_dim, device=device, dtype=dtype),
            torch.full((*rows, c.n_heads), float("-inf"), device=device, dtype=dtype),
            torch.zeros(*rows, max(c.conv_kernel - 1, 0), c.d_inner, device=device, dtype=dtype),
        )

    def reset_hidden_state(
        self, hidden_state: MLSTMState | None, dones: np.ndarray | torch.Tensor
    ) -> MLSTMState | None:
        """The state with the rows whose episode ended emptied (new tensors; the other rows keep theirs)."""
        if hidden_state is None:
            return None
        c, n, m, conv = hidden_state
        # reset_rows zeroes; the stabiliser's empty value is -inf, so mark the rows on a ones tensor first.
        fresh = reset_rows(torch.ones_like(m, dtype=torch.bool), dones).logical_not()
        return (
            reset_rows(c, dones),
            reset_rows(n, dones),
            m.masked_fill(fresh, float("-inf")),
            reset_rows(conv, dones),
        )

    def forward(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: MLSTMState | None = None
    ) -> tuple[torch.Tensor, MLSTMState]:
        """Encodes ``seq`` (B, L, tstep_dim) from ``hidden_state`` (None: a fresh start).

        Returns:
            The outputs (B, L, d_model) and the state after the last step (:data:`MLSTMState`).
        """
        x = self.inp(seq)
        new_states = []
        for layer, block in enumerate(self.blocks):
            layer_state = None if hidden_state is None else tuple(s[:, layer] for s in hidden_state)
            x, new_state = block(x, layer_state)
            new_states.append(new_state)
        dtype = recurrence_dtype(self.inp.weight.dtype)
        c, n, m, conv = (torch.stack([s[i] for s in new_states], dim=1).to(dtype) for i in range(4))
        return self.out_norm(x), (c, n, m, conv)
