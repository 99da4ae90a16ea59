"""The ``transformer`` trajectory encoder: a causal pre-norm Transformer with a per-row KV cache."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import cast

import numpy as np
import torch
from torch import nn

from amago_nets.attention import (
    attend_blocks,
    attend_cached,
    attend_window,
    masked_attention,
    resolve_backend,
    runs_in_blocks,
    window_backend,
)
from amago_nets.base import TrajEncoder
from amago_nets.kv_cache import KVCache
from amago_nets.layers import activation_module, linear_layer, normalization
from amago_nets.positions import FixedPosEmb, LearnablePosEmb, RotaryPosEmb
from amago_nets.real_steps import RealSteps
from amago_nets.row_groups import RowGroup, plan_row_groups
from amago_nets.specs import TransformerTrajEncoderConfig


class SelfAttention(nn.Module):
    """Multi-head self-attention: qkv projection → (RoPE) → attention → per-head scale → output projection."""

    def __init__(self, config: TransformerTrajEncoderConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.head_dim = config.d_model // config.n_heads
        self.backend = config.attention
        self.dropout_attn = config.dropout_attn
        # Both are 0 / None unless attention is sliding_sink (the config refuses them otherwise).
        self.sink = config.sink_size
        self.logit_clip = config.logit_clip
        self.qkv = linear_layer(
            config.d_model, 3 * config.d_model, bias=False, sigma_reparam=config.sigma_reparam
        )
        self.out = linear_layer(config.d_model, config.d_model, sigma_reparam=config.sigma_reparam)
        self.dropout_qkv = nn.Dropout(config.dropout_qkv)
        self.head_scale = nn.Parameter(torch.ones(1, 1, config.n_heads, 1), requires_grad=config.head_scaling)
        self.rope = RotaryPosEmb(self.head_dim) if config.pos_emb == "rope" else None

    def _project(self, x: torch.Tensor, time_idxs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        batch, length, _ = x.shape
        qkv = self.dropout_qkv(self.qkv(x)).reshape(batch, length, 3, self.n_heads, self.head_dim)
        q, k, v = qkv.unbind(dim=2)
        if self.rope is not None:
            q, k = self.rope(q, time_idxs), self.rope(k, time_idxs)
        return q, k, v

    def _merge(self, heads: torch.Tensor) -> torch.Tensor:
        batch, length = heads.shape[:2]
        return self.out((heads * self.head_scale).reshape(batch, length, -1))

    def forward(
        self, x: torch.Tensor, time_idxs: torch.Tensor, context: int, real: RealSteps | None = None
    ) -> torch.Tensor:
        """Attention over a whole window (B, L, d_model); with ``real``, ``x`` and ``time_idxs`` hold only the
        window's real steps (1, N, ...), and only attention itself sees a padded layout (bf16 or fp16 on a CPU:
        that of :func:`~amago_nets.attention.attend_blocks`, rows longest first)."""
        q, k, v = self._project(x, time_idxs)
        backend = resolve_backend(
            self.backend, x.device, needs_grad=torch.is_grad_enabled() and q.requires_grad
        )
        dropout = self.dropout_attn if self.training else 0.0
        if real is not None:
            runs = window_backend(
                backend, length=real.steps, context=context, sink=self.sink, logit_clip=self.logit_clip
            )
            if runs == "sdpa" and runs_in_blocks(q, dropout):
                # bf16 / fp16 on a CPU: the real steps go straight into the blocks' layout and back.
                return self._merge(attend_blocks(q, k, v, context=context, real=real))
            q, k, v = real.put(q), real.put(k), real.put(v)
        heads = attend_window(
            q,
            k,
            v,
            context=context,
            dropout_p=dropout,
            backend=backend,
            sink=self.sink,
            logit_clip=self.logit_clip,
        )
        return self._merge(heads if real is None else real.take(heads))

    def step(
        self,
        x: torch.Tensor,
        time_idxs: torch.Tensor,
        cache: KVCache,
        layer: int,
        valid: torch.Tensor,
        groups: tuple[RowGroup, ...] | None = None,
        write_index: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Attention of one new step per cache row (B, 1, d_model) over that row's cache, after writing to it.

        Inputs are in cache-row order; ``valid`` is each row's valid slots after the write, ``groups`` the
        step's runs of rows by length (built here when None), see ``attend_cached``, and ``write_index`` the
        step's :meth:`KVCache.write_index` (built here when None).
        """
        q, k, v = self._project(x, time_idxs)
        cache.write(layer, k, v, write_index)
        backend = resolve_backend(self.backend, x.device)
        heads = attend_cached(
            q,
            cache.layer_keys(layer),
            cache.layer_values(layer),
            valid,
            backend=backend,
            groups=groups,
            logit_clip=self.logit_clip,
        )
        return self._merge(heads)

    def fixed_shape_step(
        self, x: torch.Tensor, time_idxs: torch.Tensor, cache: KVCache, layer: int, valid_slots: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`step` for a traced or exported graph: one masked attention over every row's whole cache.

        Returns the output and ``layer``'s new keys and values (storage layout); the cache is not changed.
        ``valid_slots`` is :meth:`KVCache.valid_slots`; inputs are in cache-row order.
        """
        q, k, v = self._project(x, time_idxs)
        keys, values = cache.written_layer(layer, k, v)
        # sdpa takes (B, H, slots, d): the heads-first storage as it is, the slots-first one transposed.
        key_heads, value_heads = (
            (keys, values) if cache.heads_first else (keys.transpose(1, 2), values.transpose(1, 2))
        )
        heads = masked_attention(
            q.transpose(1, 2),
            key_heads.to(q.dtype),
            value_heads.to(q.dtype),
            valid_slots[:, None, None, :],
            logit_clip=self.logit_clip,
        )
        return self._merge(heads.transpose(1, 2)), keys, values


class TransformerLayer(nn.Module):
    """Pre-norm layer with optional NormFormer norms.

    ``x + norm2(attn(norm1(x)))`` then ``x + drop(ff2(norm4(act(ff1(norm3(x))))))``.
    """

    def __init__(self, config: TransformerTrajEncoderConfig) -> None:
        super().__init__()
        d_model, sigma = config.d_model, config.sigma_reparam
        extra = config.norm if config.normformer_norms else "none"
        self.attention = SelfAttention(config)
        self.norm1 = normalization(config.norm, d_model)
        self.norm2 = normalization(extra, d_model)
        self.norm3 = normalization(config.norm, d_model)
        self.norm4 = normalization(extra, config.d_ff)
        self.ff1 = linear_layer(d_model, config.d_ff, sigma_reparam=sigma)
        self.ff2 = linear_layer(config.d_ff, d_model, sigma_reparam=sigma)
        self.act = activation_module(config.activation)
        self.dropout_ff = nn.Dropout(config.dropout_ff)

    def _feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.dropout_ff(self.ff2(self.norm4(self.act(self.ff1(self.norm3(x))))))

    def forward(
        self, x: torch.Tensor, time_idxs: torch.Tensor, context: int, real: RealSteps | None = None
    ) -> torch.Tensor:
        """Whole-window pass (over the real steps alone when ``real`` is given; see ``SelfAttention``)."""
        x = x + self.norm2(self.attention(self.norm1(x), time_idxs, context, real))
        return self._feed_forward(x)

    def step(
        self,
        x: torch.Tensor,
        time_idxs: torch.Tensor,
        cache: KVCache,
        layer: int,
        valid: torch.Tensor,
        groups: tuple[RowGroup, ...] | None = None,
        write_index: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """One-step pass using (and filling) the cache; inputs in cache-row order."""
        attended = self.attention.step(self.norm1(x), time_idxs, cache, layer, valid, groups, write_index)
        x = x + self.norm2(attended)
        return self._feed_forward(x)

    def fixed_shape_step(
        self, x: torch.Tensor, time_idxs: torch.Tensor, cache: KVCache, layer: int, valid_slots: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`step` for a traced or exported graph; also returns ``layer``'s new keys and values."""
        attended, keys, values = self.attention.fixed_shape_step(
            self.norm1(x), time_idxs, cache, layer, valid_slots
        )
        return self._feed_forward(x + self.norm2(attended)), keys, values


def capturing_graph() -> bool:
    """Whether the running code is being traced (``torch.jit.trace``) or exported (``torch.export``): a graph
    then records one path through it, so steps must not branch on tensor values.

    torch's ONNX exporters capture through one of the two (``dynamo=True`` through ``torch.export``, the
    older one through tracing). ``torch.onnx.is_in_onnx_export()`` is not asked: it imports on every call,
    about 1 us, which every eager rollout step would pay.
    """
    return torch.jit.is_tracing() or torch.compiler.is_exporting()


class TransformerTrajEncoder(TrajEncoder):
    """Linear input + absolute-time positions → dropout → Transformer layers → final norm.

    Each step sees itself and up to ``context - 1`` earlier steps of its episode, where ``context`` is
    ``window_size`` or else ``max_seq_len``. Training windows longer than the context use the same sliding
    window, so a rollout that has run past its context matches a full forward over the whole episode. With
    ``attention="sliding_sink"`` each step also sees the first ``sink_size`` steps, and the cache holds
    ``context + sink_size`` slots per row (see :class:`~amago_nets.kv_cache.KVCache`).

    Rollout state is a :class:`~amago_nets.kv_cache.KVCache` with a length per env; ``reset_hidden_state``
    restarts single envs. ``forward`` with a cache takes one step (L = 1) at a time. With ``sdpa``/``flex``
    the cache keeps its rows sorted by length, and a step attends over each run of similar rows only up to
    its own longest row (:mod:`amago_nets.row_groups`), so envs at mixed lengths cost less than if all were
    at the longest length.

    Planning those runs reads the lengths in Python, which a traced or exported graph cannot follow. While a
    graph is being captured (:func:`capturing_graph`), a step instead attends over every row's whole cache
    with the slots beyond each row's length masked, and writes the cache by a select on the write slots: fixed
    shapes, the same outputs and cache, including once a row has wrapped around its ``context`` slots. An
    exporter also opens :meth:`exportable_memory`, so that restarting an env means replacing its cache row.
    """

    config: TransformerTrajEncoderConfig  # never None here: __init__ falls back to the defaults

    def __init__(
        self, config: TransformerTrajEncoderConfig | None = None, *, tstep_dim: int, max_seq_len: int
    ) -> None:
        config = config or TransformerTrajEncoderConfig()
        super().__init__(config, tstep_dim=tstep_dim, max_seq_len=max_seq_len)
        self.d_model = config.d_model
        self.n_heads = config.n_heads
        self.context = config.window_size or max_seq_len
        self.sink = config.sink_size
        self.inp = nn.Linear(tstep_dim, config.d_model)
        if config.pos_emb == "fixed":
            self.pos_emb: nn.Module | None = FixedPosEmb(config.d_model)
        elif config.pos_emb == "learnable":
            self.pos_emb = LearnablePosEmb(config.d_model, config.max_time_idx)
        else:
            self.pos_emb = None  # rope rotates queries and keys inside attention instead
        self.dropout_emb = nn.Dropout(config.dropout_emb)
        self.layers = nn.ModuleList(TransformerLayer(config) for _ in range(config.n_layers))
        self.out_norm = normalization(config.norm, config.d_model)
        # New caches keep their rows in env order while an exporter has :meth:`exportable_memory` open.
        self.rows_in_env_order = False

    @property
    def emb_dim(self) -> int:
        """``d_model``."""
        return self.d_model

    def _cache_dtype(self, device: torch.device) -> torch.dtype:
        # flash-attn reads bf16 caches only; every other backend keeps fp32 for exact equivalence.
        backend = resolve_backend(self.config.attention, device)
        return torch.bfloat16 if backend == "flash" else torch.float32

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> KVCache:
        """An empty cache of ``context`` steps per row (plus ``sink_size`` for the episode's first steps)."""
        device = torch.device(device)
        flash = resolve_backend(self.config.attention, device) == "flash"
        return KVCache.empty(
            n_layers=len(self.layers),
            batch_size=batch_size,
            context=self.context + self.sink,
            n_heads=self.n_heads,
            head_dim=self.d_model // self.n_heads,
            device=device,
            dtype=self._cache_dtype(device),
            # flash-attn reads each row only up to its own length, so keeping rows sorted would not pay,
            # and it needs the slots-first layout.
            sort_rows=not flash and not self.rows_in_env_order,
            heads_first=not flash,
            sink=self.sink,
        )

    @contextlib.contextmanager
    def exportable_memory(self) -> Iterator[None]:
        """While open, new caches keep their rows in env order (rows are not sorted by length at resets).

        An exported step restarts an env by putting a fresh cache row (zeros) in place of the env's own
        (``amago_tools.policy.memory.MemoryLayout.restart_rows``), which is what a reset does to a cache whose
        rows stay in env order; with sorted rows a reset moves other envs' rows too. Eager steps over such a
        cache give the same outputs (their row groups, planned over unsorted rows, may read more slots).
        """
        before = self.rows_in_env_order
        self.rows_in_env_order = True
        try:
            yield
        finally:
            self.rows_in_env_order = before

    def reset_hidden_state(
        self, hidden_state: KVCache | None, dones: np.ndarray | torch.Tensor
    ) -> KVCache | None:
        """Rows where ``dones`` is True start a new episode (their lengths go to 0)."""
        if hidden_state is None:
            return None
        return hidden_state.reset(dones)

    def _embed(self, seq: torch.Tensor, time_idxs: torch.Tensor) -> torch.Tensor:
        x = self.inp(seq)
        if self.pos_emb is not None:
            x = x + self.pos_emb(time_idxs)
        return self.dropout_emb(x)

    def forward(
        self,
        seq: torch.Tensor,
        time_idxs: torch.Tensor,
        hidden_state: KVCache | None = None,
        pad_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, KVCache | None]:
        """Whole window when ``hidden_state`` is None; otherwise one rollout step per row.

        A window's ``pad_mask`` ((B, L), True at padding at the end of rows) lets every per-step part (input,
        projections, feed-forward, norms) run on the real steps only; attention runs on the padded layout,
        where causality keeps the padding out of every real step. Padded outputs are zeros.

        Raises:
            ValueError: a cache was given with more than one step.
        """
        if hidden_state is None:
            real = RealSteps.of_window(pad_mask)
            if real is not None:
                seq, time_idxs = real.take(seq), real.take(time_idxs)
            x = self._embed(seq, time_idxs)
            for layer in self.layers:
                x = layer(x, time_idxs, self.context, real)
            x = self.out_norm(x)
            return (x if real is None else real.put(x)), None
        if seq.shape[1] != 1:
            msg = (
                f"TransformerTrajEncoder: a KV cache advances one step at a time, got L={seq.shape[1]}; "
                "pass hidden_state=None for a whole window, or feed rollout steps one by one."
            )
            raise ValueError(msg)
        if capturing_graph():
            return self.fixed_shape_step(seq, time_idxs, hidden_state)
        x = self._embed(seq, time_idxs)
        # The layers work in cache-row order, where rows of similar length are neighbours; every layer reads
        # the same slots, so the runs of rows are planned once per step, not per layer (flash-attn stops at
        # each row's own length by itself and needs none).
        x, time_idxs = hidden_state.by_row(x), hidden_state.by_row(time_idxs)
        valid = hidden_state.by_row(hidden_state.valid_after_write())
        groups = None
        if resolve_backend(self.config.attention, x.device) != "flash":
            groups = plan_row_groups(valid)
        write_index = hidden_state.write_index()  # every layer writes the same slots
        for index, layer in enumerate(self.layers):
            x = cast(TransformerLayer, layer).step(
                x, time_idxs, hidden_state, index, valid, groups, write_index
            )
        return hidden_state.by_env(self.out_norm(x)), hidden_state.advanced()

    def fixed_shape_step(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, cache: KVCache
    ) -> tuple[torch.Tensor, KVCache]:
        """One rollout step (``seq`` (B, 1, tstep_dim)) with fixed shapes and no Python decision from tensor
        values: what ``forward`` runs while a graph is captured (see the class). Returns new cache tensors
        rather than writing ``cache`` in place."""
        x = self._embed(seq, time_idxs)
        x, time_idxs = cache.to_rows(x), cache.to_rows(time_idxs)
        valid_slots = cache.valid_slots()
        keys, values = [], []
        for index, layer in enumerate(self.layers):
            x, layer_keys, layer_values = cast(TransformerLayer, layer).fixed_shape_step(
                x, time_idxs, cache, index, valid_slots
            )
            keys.append(layer_keys)
            values.append(layer_values)
        x = self.out_norm(x)
        return cache.to_envs(x), cache.with_layers(keys, values)
