"""The ``gtrxl`` trajectory encoder: the Gated Transformer-XL of Parisotto et al.

From "Stabilizing Transformers for Reinforcement Learning" (Parisotto, Song, Rae, Pascanu, Gulcehre, Jayakumar,
Jaderberg, Kaufman, Clark, Noury, Botvinick, Heess, Hadsell, ICML 2020). Each block is the paper's GTrXL (GRU)
layer::

    Y_bar = RelativeMultiHeadAttention(LayerNorm([M, E]))     # identity-map reordering: LN on the input
    Y     = g(E, ReLU(Y_bar))                                 # GRU gate instead of the residual E + Y_bar
    E_bar = FeedForward(LayerNorm(Y))
    E'    = g(Y, ReLU(E_bar))

with the gate ``g(x, y)``: ``r = sigmoid(W_r y + U_r x)``, ``z = sigmoid(W_z y + U_z x - b_g)``, ``h = tanh(W_g y +
U_g (r * x))``, ``g = (1 - z) * x + z * h``; ``b_g > 0`` starts every block near the identity.

Attention uses Transformer-XL's relative positions (Dai et al. 2019): the score of query ``i`` and key ``j`` is
``(q_i + u) . k_j + (q_i + v) . W_R R_{i-j}``, scaled by ``1 / sqrt(d_head)``, with ``R`` the sinusoids of the
distance and ``u``, ``v`` learned per head. The memory ``M`` of a layer is that layer's inputs at the previous
``memory_len`` steps, i.e. Transformer-XL's memory with one-step segments.

What differs from the paper's training: it trains on segments with the memory of earlier segments held fixed
(stop-gradient); here a training window starts fresh and every position attends through a banded causal mask
(key at most ``memory_len`` steps back) with gradients through the whole window. That computes exactly what the
rollout computes: an ``n``-layer stack's step sees ``n * memory_len + 1`` steps, each layer's key carrying what
its own step saw. Rollouts keep, per layer, the keys and values of the last ``memory_len`` steps in a shift
buffer and a per-row count of how many of them belong to the current episode: a constant cost per step.
"""

from __future__ import annotations

from typing import NamedTuple, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from amago_memories.gtrxl.specs import GTrXLConfig
from amago_memories.positions import sinusoid
from amago_memories.scan import reset_rows


class GTrXLState(NamedTuple):
    """Rollout memory of every layer, batch first (what :func:`~amago_memories.scan.reset_rows` resets).

    Slot ``j`` of ``memory_len`` holds the step ``memory_len - j`` steps before the next one (oldest first); a
    slot is this episode's when its distance is at most ``filled``.
    """

    keys: torch.Tensor
    """(B, n_layers, n_heads, memory_len, d_head): content keys ``W_k LN(x)`` of the last steps."""
    values: torch.Tensor
    """(B, n_layers, n_heads, memory_len, d_head): their values."""
    filled: torch.Tensor
    """(B,) int64: steps of the current episode held in memory (0 after a reset, at most ``memory_len``)."""


LayerMemory = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""One layer's ``(keys, values, filled)`` as in :class:`GTrXLState`, without the layer dim."""


class RelativeAttention(nn.Module):
    """Multi-head attention with Transformer-XL's relative positions over a band of ``memory_len`` steps back.

    Args:
        d_model: width of the input and output.
        n_heads: number of heads (divides ``d_model``).
        memory_len: how many earlier steps a query sees besides its own.
        dropout: dropout on the attention probabilities.
    """

    distances: torch.Tensor
    """(memory_len + 1, d_model) sinusoids ``R`` of the distances 0..memory_len."""

    def __init__(self, d_model: int, n_heads: int, memory_len: int, dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.memory_len = memory_len
        # Transformer-XL has no biases on q, k, v: u and v below are the learned, position-free terms.
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.position = nn.Linear(d_model, d_model, bias=False)  # W_R
        self.content_bias = nn.Parameter(torch.zeros(n_heads, self.d_head))  # u
        self.position_bias = nn.Parameter(torch.zeros(n_heads, self.d_head))  # v
        self.out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        distances = sinusoid(torch.arange(memory_len + 1), d_model, torch.float32)
        self.register_buffer("distances", distances, persistent=False)  # R_0 .. R_memory_len

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Attends over a training window ``x`` (B, L, d_model) (already LayerNormed): (B, L, d_model)."""
        q, k, v = self._project(x)
        return self._attend(q, k, v, kept=0, in_episode=None)

    def continue_from(self, x: torch.Tensor, memory: LayerMemory) -> tuple[torch.Tensor, LayerMemory]:
        """Attends over ``x`` (B, L, d_model) after ``memory``: the output and the memory after the last step.

        A rollout step is ``L = 1``: one query over ``memory_len + 1`` keys, a constant cost.
        """
        old_keys, old_values, filled = memory
        q, k, v = self._project(x)
        kept, length = old_keys.shape[2], x.shape[1]
        keys, values = torch.cat([old_keys, k], 2), torch.cat([old_values, v], 2)
        # A memory slot belongs to this episode when it lies at most `filled` steps before the new ones.
        in_episode = torch.arange(kept + length, device=x.device)[None, :] >= kept - filled[:, None]  # (B, P)
        output = self._attend(q, keys, values, kept=kept, in_episode=in_episode)
        # Shift buffer: the last `kept` keys (old and new) stay, oldest first.
        return output, (keys[:, :, length:], values[:, :, length:], (filled + length).clamp(max=kept))

    def _project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys and values of (B, L, d_model), each (B, H, L, d_head)."""
        batch, length, _ = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        return q, k, v

    def _attend(
        self,
        q: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        *,
        kept: int,
        in_episode: torch.Tensor | None,
    ) -> torch.Tensor:
        """Queries (B, H, L, d_head) over ``kept`` memory slots then the L new steps' keys and values (B, H, P,
        d_head); ``in_episode`` (B, P) hides memory slots of an earlier episode."""
        batch, _, length, _ = q.shape
        n_keys = keys.shape[2]
        # Key p lies `kept + i - p` steps before query i.
        queries = torch.arange(length, device=q.device)
        distance = kept + queries[:, None] - torch.arange(n_keys, device=q.device)[None, :]  # (L, P)
        visible = ((distance >= 0) & (distance <= self.memory_len))[None, None]  # (1, 1, L, P)
        if in_episode is not None:
            visible = visible & in_episode[:, None, None, :]
        content = (q + self.content_bias[:, None]) @ keys.transpose(-1, -2)  # (B, H, L, P)
        rel = self.position(self.distances.to(q.dtype)).view(-1, self.n_heads, self.d_head).transpose(0, 1)
        by_distance = (q + self.position_bias[:, None]) @ rel.transpose(-1, -2)  # (B, H, L, memory_len + 1)
        index = distance.clamp(0, self.memory_len).expand(batch, self.n_heads, length, n_keys)
        scores = (content + by_distance.gather(-1, index)) * self.d_head**-0.5
        # Every query sees at least its own step (distance 0), so no row of the softmax is empty.
        weights = self.dropout(torch.softmax(scores.masked_fill(~visible, float("-inf")), -1))
        return self.out((weights @ values).transpose(1, 2).reshape(batch, length, -1))


class GRUGate(nn.Module):
    """The paper's GRU-type gating layer ``g(x, y)`` in place of a residual connection ``x + y``.

    Args:
        d_model: width of ``x`` and ``y``.
        gate_bias: ``b_g``, subtracted in the update gate so the layer starts near ``g(x, y) = x``.
    """

    def __init__(self, d_model: int, gate_bias: float) -> None:
        super().__init__()
        self.from_y = nn.Linear(d_model, 3 * d_model)  # W_r, W_z, W_g
        self.from_x = nn.Linear(d_model, 2 * d_model, bias=False)  # U_r, U_z
        self.candidate_x = nn.Linear(d_model, d_model, bias=False)  # U_g
        # Zero biases leave b_g alone to set where the update gate starts, as in the paper.
        nn.init.zeros_(self.from_y.bias)
        self.gate_bias = gate_bias

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``(1 - z) * x + z * h``: the residual stream ``x`` updated by the sublayer output ``y``."""
        y_r, y_z, y_g = self.from_y(y).chunk(3, -1)
        x_r, x_z = self.from_x(x).chunk(2, -1)
        reset = torch.sigmoid(y_r + x_r)
        update = torch.sigmoid(y_z + x_z - self.gate_bias)
        candidate = torch.tanh(y_g + self.candidate_x(reset * x))
        return (1.0 - update) * x + update * candidate


class GTrXLBlock(nn.Module):
    """One GTrXL layer: gated relative attention, then a gated position-wise feed-forward sublayer."""

    def __init__(self, config: GTrXLConfig, memory_len: int) -> None:
        super().__init__()
        self.norm_attention = nn.LayerNorm(config.d_model)
        self.attention = RelativeAttention(config.d_model, config.n_heads, memory_len, config.dropout)
        self.gate_attention = GRUGate(config.d_model, config.gate_bias)
        self.norm_ff = nn.LayerNorm(config.d_model)
        self.ff = nn.Sequential(
            nn.Linear(config.d_model, config.d_ff), nn.ReLU(), nn.Linear(config.d_ff, config.d_model)
        )
        self.gate_ff = GRUGate(config.d_model, config.gate_bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One layer over a training window (B, L, d_model)."""
        x = self.gate_attention(x, F.relu(self.dropout(self.attention(self.norm_attention(x)))))
        return self._feed_forward(x)

    def continue_from(self, x: torch.Tensor, memory: LayerMemory) -> tuple[torch.Tensor, LayerMemory]:
        """One layer over (B, L, d_model) after ``memory``, returned updated."""
        attended, memory = self.attention.continue_from(self.norm_attention(x), memory)
        x = self.gate_attention(x, F.relu(self.dropout(attended)))
        return self._feed_forward(x), memory

    def _feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gate_ff(x, F.relu(self.dropout(self.ff(self.norm_ff(x)))))


class GTrXLTrajEncoder(nn.Module):
    """Gated Transformer-XL (Parisotto et al. 2020) keeping amago's trajectory-encoder contract.

    Input projection to ``d_model`` (plus, optionally, a sinusoidal embedding of absolute episode time),
    ``n_layers`` GTrXL blocks and an output LayerNorm. Each layer attends to its own step and its inputs at the
    previous ``memory_len`` steps (None in the config: ``max_seq_len - 1``), with Transformer-XL's relative
    positions. Training windows of any length use a banded causal mask; rollouts carry a fixed-size memory
    (:class:`GTrXLState`), and ``forward`` with a state also accepts ``L > 1`` steps.

    Args:
        config: the validated config.
        tstep_dim: size of the timestep embeddings.
        max_seq_len: longest training window; sets ``memory_len`` when the config leaves it None.
    """

    def __init__(self, config: GTrXLConfig, *, tstep_dim: int, max_seq_len: int) -> None:
        super().__init__()
        if tstep_dim < 1 or max_seq_len < 1:
            msg = f"gtrxl: tstep_dim and max_seq_len must be positive, got {tstep_dim}, {max_seq_len}."
            raise ValueError(msg)
        self.config = config
        self.max_seq_len = max_seq_len
        self.memory_len = config.memory_len if config.memory_len is not None else max_seq_len - 1
        self.inp = nn.Linear(tstep_dim, config.d_model)
        self.blocks = nn.ModuleList(GTrXLBlock(config, self.memory_len) for _ in range(config.n_layers))
        self.out_norm = nn.LayerNorm(config.d_model)

    @property
    def emb_dim(self) -> int:
        """Size of the output embedding (``d_model``)."""
        return self.config.d_model

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> GTrXLState:
        """An empty memory (``filled`` 0) for ``batch_size`` new episodes, in the parameters' dtype."""
        config = self.config
        shape = (
            batch_size,
            config.n_layers,
            config.n_heads,
            self.memory_len,
            config.d_model // config.n_heads,
        )
        dtype = self.inp.weight.dtype
        return GTrXLState(
            keys=torch.zeros(shape, device=device, dtype=dtype),
            values=torch.zeros(shape, device=device, dtype=dtype),
            filled=torch.zeros(batch_size, device=device, dtype=torch.long),
        )

    def reset_hidden_state(self, hidden_state: GTrXLState, dones: np.ndarray | torch.Tensor) -> GTrXLState:
        """Empties the memory of the rows whose episode ended; the other rows keep theirs.

        ``filled = 0`` alone already hides the old steps; the keys and values are zeroed too so that a reset row
        equals a fresh one.
        """
        return GTrXLState(*(reset_rows(part, dones) for part in hidden_state))

    def forward(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: GTrXLState | None = None
    ) -> tuple[torch.Tensor, GTrXLState | None]:
        """Encodes (B, L, tstep_dim) into (B, L, d_model).

        Args:
            seq: timestep embeddings.
            time_idxs: (B, L) absolute time of each step within its episode.
            hidden_state: None for a training window (a fresh start; the returned state is then None too), else
                the rollout memory to continue from.
        """
        x = self.inp(seq)
        if self.config.time_embedding:
            x = x + sinusoid(time_idxs, self.config.d_model, x.dtype)
        if hidden_state is None:
            for block in self.blocks:
                x = block(x)
            return self.out_norm(x), None
        keys, values = [], []
        filled = hidden_state.filled
        for index, block in enumerate(self.blocks):
            layer_memory = (hidden_state.keys[:, index], hidden_state.values[:, index], hidden_state.filled)
            x, (layer_keys, layer_values, filled) = cast(GTrXLBlock, block).continue_from(x, layer_memory)
            keys.append(layer_keys)
            values.append(layer_values)
        return self.out_norm(x), GTrXLState(torch.stack(keys, 1), torch.stack(values, 1), filled)
