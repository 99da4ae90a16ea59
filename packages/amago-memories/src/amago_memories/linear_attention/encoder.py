"""The ``linear_attention`` trajectory encoder: causal linear attention in pre-LayerNorm Transformer blocks.

From "Transformers are RNNs: Fast Autoregressive Transformers with Linear Attention" (Katharopoulos, Vyas,
Pappas, Fleuret, ICML 2020). Softmax attention's kernel is replaced by a feature map ``phi(x) = elu(x) + 1``, so
causal attention becomes the recurrence ``S_t = S_{t-1} + phi(k_t) v_t^T``, ``z_t = z_{t-1} + phi(k_t)``,
``out_t = phi(q_t)^T S_t / (phi(q_t)^T z_t + eps)``: a Transformer in training and an RNN with a fixed-size state
in rollouts. The optional decay ``S_t = gamma S_{t-1} + ...`` is RetNet's ("Retentive Network", Sun et al.
2023), applied to the normaliser ``z`` too so the output stays a weighted average of the values.

Training windows use the masked quadratic form ``(phi(Q) phi(K)^T * D) V`` with ``D[t, s] = gamma^(t - s)`` for
``s <= t`` and 0 above the diagonal, rather than a cumulative sum of outer products: the quadratic form keeps
``B x H x L x L`` numbers where the cumulative sum keeps ``B x H x L x d_head x d_head`` (32 times more at the
default 32-wide heads and windows shorter than 1024 steps), it is two batched matmuls, and it is exact for any
``L`` (no chunk boundary, no long running sum in the window). Rollout steps carry ``(S, z)`` per layer and head.
"""

from __future__ import annotations

from typing import NamedTuple, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from amago_memories.linear_attention.specs import LinearAttentionConfig
from amago_memories.positions import sinusoid
from amago_memories.precision import recurrence_dtype
from amago_memories.scan import reset_rows


class LinearAttentionState(NamedTuple):
    """Rollout state of every layer, batch first (what :func:`~amago_memories.scan.reset_rows` resets)."""

    kv: torch.Tensor
    """``S``: (B, n_layers, n_heads, d_head, d_head), the (decayed) sum of ``phi(k) v^T``."""
    k_sum: torch.Tensor
    """``z``: (B, n_layers, n_heads, d_head), the (decayed) sum of ``phi(k)``."""


LayerState = tuple[torch.Tensor, torch.Tensor]
"""One layer's ``(S, z)``: (B, n_heads, d_head, d_head) and (B, n_heads, d_head)."""


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """The paper's ``phi(x) = elu(x) + 1``: positive, so the normaliser never vanishes or changes sign."""
    return F.elu(x) + 1.0


class LinearAttention(nn.Module):
    """Multi-head causal linear attention (Katharopoulos et al. 2020), optionally decayed (RetNet, Sun et al.
    2023).

    Args:
        d_model: width of the input and output.
        n_heads: number of heads (divides ``d_model``).
        decays: per-head ``gamma`` in (0, 1], or None for the paper's undecayed form.
        eps: added to the normaliser.
    """

    log_decay: torch.Tensor
    """(n_heads,) ``log gamma`` of each head (0: no decay)."""

    def __init__(self, d_model: int, n_heads: int, decays: tuple[float, ...] | None, eps: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.eps = eps
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        log_decay = torch.zeros(n_heads) if decays is None else torch.log(torch.tensor(decays))
        # Derived from the config, so not saved: a checkpoint never overrides the decay a config asks for.
        self.register_buffer("log_decay", log_decay, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Attends over a training window ``x`` (B, L, d_model) from a fresh state: (B, L, d_model)."""
        fq, fk, v = self._features(x)
        return self._merge(*self._within(fq, fk, v))

    def continue_from(self, x: torch.Tensor, state: LayerState) -> tuple[torch.Tensor, LayerState]:
        """Attends over ``x`` (B, L, d_model) continuing from ``state`` = ``(S, z)``: the output and the state
        after the last step. A rollout step is ``L = 1``: a 1 x 1 "window" plus the state, a constant cost."""
        fq, fk, v = self._features(x)
        numerator, denominator = self._within(fq, fk, v)
        kv, k_sum = state
        length = x.shape[1]
        log_decay = self.log_decay.to(recurrence_dtype(x.dtype))
        steps = torch.arange(length, device=x.device, dtype=log_decay.dtype)
        # The state from before the window has decayed t + 1 times by the window's step t.
        carried = torch.exp((steps + 1) * log_decay[:, None])  # (H, L)
        numerator = numerator + carried[..., None] * (fq @ kv)
        denominator = denominator + carried * (fq @ k_sum[..., None]).squeeze(-1)
        # The window's step s has decayed L - 1 - s times by its last step.
        weighted_k = fk * torch.exp((length - 1 - steps) * log_decay[:, None])[..., None]
        whole = torch.exp(length * log_decay)[:, None]  # (H, 1)
        new_state = (
            whole[..., None] * kv + weighted_k.transpose(-1, -2) @ v,
            whole * k_sum + weighted_k.sum(-2),
        )
        return self._merge(numerator, denominator), new_state

    def _features(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``phi(q)``, ``phi(k)`` and ``v`` of (B, L, d_model), each (B, H, L, d_head)."""
        batch, length, _ = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        return feature_map(q), feature_map(k), v

    def _within(
        self, fq: torch.Tensor, fk: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Numerator (B, H, L, d_head) and normaliser (B, H, L) of the steps within the window."""
        length = fq.shape[2]
        steps = torch.arange(length, device=fq.device)
        gap = steps[:, None] - steps[None, :]
        # gamma^(t - s) as exp((t - s) log gamma); the gap is clamped so the masked upper triangle stays finite.
        log_decay = self.log_decay.to(recurrence_dtype(fq.dtype))
        decay = torch.exp(gap.clamp(min=0).to(log_decay.dtype) * log_decay[:, None, None])
        scores = (fq @ fk.transpose(-1, -2)) * decay.masked_fill(gap < 0, 0.0)  # (B, H, L, L)
        return scores @ v, scores.sum(-1)

    def _merge(self, numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
        """The normalised heads, concatenated and projected: (B, L, d_model)."""
        heads = numerator / (denominator[..., None] + self.eps)
        batch, _, length, _ = heads.shape
        return self.out(heads.transpose(1, 2).reshape(batch, length, -1))


class LinearAttentionBlock(nn.Module):
    """Pre-LayerNorm Transformer block: ``x + attn(LN(x))``, then ``x + ff(LN(x))``."""

    def __init__(self, config: LinearAttentionConfig) -> None:
        super().__init__()
        self.norm_attention = nn.LayerNorm(config.d_model)
        self.attention = LinearAttention(config.d_model, config.n_heads, config.head_decays(), config.eps)
        self.norm_ff = nn.LayerNorm(config.d_model)
        self.ff = nn.Sequential(
            nn.Linear(config.d_model, config.d_ff), nn.GELU(), nn.Linear(config.d_ff, config.d_model)
        )
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One block over a training window (B, L, d_model)."""
        x = x + self.dropout(self.attention(self.norm_attention(x)))
        return x + self.dropout(self.ff(self.norm_ff(x)))

    def continue_from(self, x: torch.Tensor, state: LayerState) -> tuple[torch.Tensor, LayerState]:
        """One block over (B, L, d_model), its attention continuing from ``state``."""
        attended, state = self.attention.continue_from(self.norm_attention(x), state)
        x = x + self.dropout(attended)
        return x + self.dropout(self.ff(self.norm_ff(x))), state


class LinearAttentionTrajEncoder(nn.Module):
    """Linear-attention Transformer (Katharopoulos et al. 2020) keeping amago's trajectory-encoder contract.

    Input projection to ``d_model`` (plus a sinusoidal embedding of absolute episode time), ``n_layers``
    pre-LayerNorm blocks of multi-head linear attention and a feed-forward sublayer, and an output LayerNorm.
    Training windows (``hidden_state=None``) use the parallel masked quadratic form; rollouts carry each layer's
    ``(S, z)`` (:class:`LinearAttentionState`), a constant cost per step. ``forward`` with a state also takes
    ``L > 1`` steps (it continues the state over them), so a rollout may be fed in chunks.

    Args:
        config: the validated config.
        tstep_dim: size of the timestep embeddings.
        max_seq_len: longest training window (unused: the state covers the whole episode).
    """

    def __init__(self, config: LinearAttentionConfig, *, tstep_dim: int, max_seq_len: int) -> None:
        super().__init__()
        if tstep_dim < 1 or max_seq_len < 1:
            msg = f"linear_attention: tstep_dim and max_seq_len must be positive, got {tstep_dim}, {max_seq_len}."
            raise ValueError(msg)
        self.config = config
        self.max_seq_len = max_seq_len
        self.inp = nn.Linear(tstep_dim, config.d_model)
        self.blocks = nn.ModuleList(LinearAttentionBlock(config) for _ in range(config.n_layers))
        self.out_norm = nn.LayerNorm(config.d_model)

    @property
    def emb_dim(self) -> int:
        """Size of the output embedding (``d_model``)."""
        return self.config.d_model

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> LinearAttentionState:
        """Zero ``(S, z)`` for ``batch_size`` new episodes (in the parameters' dtype)."""
        config = self.config
        d_head = config.d_model // config.n_heads
        shape = (batch_size, config.n_layers, config.n_heads, d_head)
        dtype = self.inp.weight.dtype
        return LinearAttentionState(
            kv=torch.zeros(*shape, d_head, device=device, dtype=dtype),
            k_sum=torch.zeros(shape, device=device, dtype=dtype),
        )

    def reset_hidden_state(
        self, hidden_state: LinearAttentionState, dones: np.ndarray | torch.Tensor
    ) -> LinearAttentionState:
        """Zeroes the state of the rows whose episode ended; the other rows keep theirs."""
        return LinearAttentionState(reset_rows(hidden_state.kv, dones), reset_rows(hidden_state.k_sum, dones))

    def forward(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: LinearAttentionState | None = None
    ) -> tuple[torch.Tensor, LinearAttentionState | None]:
        """Encodes (B, L, tstep_dim) into (B, L, d_model).

        Args:
            seq: timestep embeddings.
            time_idxs: (B, L) absolute time of each step within its episode.
            hidden_state: None for a training window (a fresh start; the returned state is then None too), else
                the rollout state to continue from.
        """
        x = self.inp(seq)
        if self.config.time_embedding:
            x = x + sinusoid(time_idxs, self.config.d_model, x.dtype)
        if hidden_state is None:
            for block in self.blocks:
                x = block(x)
            return self.out_norm(x), None
        kvs, k_sums = [], []
        for index, block in enumerate(self.blocks):
            layer_state = (hidden_state.kv[:, index], hidden_state.k_sum[:, index])
            x, (kv, k_sum) = cast(LinearAttentionBlock, block).continue_from(x, layer_state)
            kvs.append(kv)
            k_sums.append(k_sum)
        return self.out_norm(x), LinearAttentionState(torch.stack(kvs, 1), torch.stack(k_sums, 1))
