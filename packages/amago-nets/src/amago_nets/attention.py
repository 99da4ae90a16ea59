"""Attention backends: one causal (optionally sliding-window) attention over a window, and one cached step.

Tensors use the (B, L, H, head_dim) layout of flash-attn; ``context`` is how many steps (itself included)
each query may see. ``sdpa``, ``flash`` and ``flex`` compute the same function, so they are interchangeable
by config. ``sliding_sink`` (AMAGO's ``ClippedSlidingSinkAttention``) changes the function: the first
``sink`` steps stay visible besides the window, and logits may be clipped.

On a CPU, a bf16 or fp16 window runs ``sdpa`` as :func:`attend_blocks`: torch's CPU flash kernel is no faster in
bf16 than in fp32 forward and 2-3x slower backward, so the blocks run it in fp32 and skip the keys no query of a
block may see (and, given the windows' real steps, the padding).
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F

from amago_nets.real_steps import RealSteps
from amago_nets.row_groups import RowGroup, plan_row_groups

BACKENDS = ("sdpa", "flash", "flex", "sliding_sink")

QUERY_BLOCK = 64
"""Queries per kernel call of :func:`attend_blocks`. Smaller blocks skip more of the causal triangle but pay
more per call: 32 and 64 ran within noise of each other (fwd + bwd, 24 x 8 heads x 251 steps x 16, 1 thread)."""


def flash_available() -> bool:
    """True when flash-attn is installed and a CUDA device exists."""
    return torch.cuda.is_available() and importlib.util.find_spec("flash_attn") is not None


def resolve_backend(requested: str, device: torch.device, *, needs_grad: bool = False) -> str:
    """The backend that will actually run on ``device``; falls back to ``sdpa`` (same results) with a warning.

    ``flash`` needs flash-attn on CUDA. ``flex`` runs anywhere without gradients, but torch has no CPU
    backward for it, so CPU training falls back. ``sliding_sink`` is plain PyTorch and runs anywhere.

    Raises:
        ValueError: ``requested`` is not a known backend.
    """
    if requested not in BACKENDS:
        msg = f"unknown attention backend {requested!r}; choose one of {BACKENDS}."
        raise ValueError(msg)
    if requested == "flash" and (device.type != "cuda" or not flash_available()):
        why = "flash-attn is not installed" if device.type == "cuda" else f"the model is on {device.type}"
        _warn_once(
            f"attention='flash' requested but {why}; using 'sdpa' (same results). "
            'Install it with: pip install "amago-nets[flash]" and run on a CUDA GPU.'
        )
        return "sdpa"
    if requested == "flex" and device.type != "cuda" and needs_grad:
        _warn_once(
            "attention='flex' has no backward pass on CPU in this torch; training uses 'sdpa' (same results), "
            "rollouts without gradients use flex. Train on a CUDA GPU to train with flex."
        )
        return "sdpa"
    return requested


@cache
def _warn_once(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def _window_mask(length: int, context: int, device: torch.device, sink: int = 0) -> torch.Tensor:
    """(L, L) bool: query i may see key j when ``i - context < j <= i``, or when ``j < sink`` and ``j <= i``."""
    idx = torch.arange(length, device=device)
    delta = idx[:, None] - idx[None, :]
    visible = (delta >= 0) & (delta < context)
    if sink:
        visible |= (idx[None, :] < sink) & (delta >= 0)
    return visible


@lru_cache(maxsize=8)
def _additive_window_mask(length: int, context: int, device: torch.device) -> torch.Tensor:
    """:func:`_window_mask` as fp32 0 / -inf, what the flash kernel adds to the logits (never written to)."""
    visible = _window_mask(length, context, device)
    return torch.zeros(visible.shape, device=device).masked_fill_(~visible, float("-inf"))


def masked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    *,
    logit_clip: float | None = None,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """Softmax attention in sdpa's (B, H, L, d) layout, with the logits optionally clipped.

    Args:
        q: (B, H, Lq, d).
        k, v: (B, H, Lk, d).
        mask: bool, broadcastable to (B, H, Lq, Lk), True where a query may see a key (None: every key).
            Each query must see at least one key.
        logit_clip: clamp the logits ``q·k / sqrt(d)`` to [-logit_clip, logit_clip] before the softmax
            (None: sdpa, whose fused kernels cannot clip).
        dropout_p: dropout on the attention probabilities (pass 0 in eval mode).

    Returns:
        (B, H, Lq, d).
    """
    if logit_clip is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
    # The clip sits between the scaled logits and the softmax, where no fused kernel lets code in, so the
    # (Lq, Lk) logits are materialised: the same formula as sdpa, written out.
    logits = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
    logits = logits.clamp(-logit_clip, logit_clip)
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(logits, dim=-1)
    if dropout_p > 0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v


def window_backend(
    backend: str, *, length: int, context: int, sink: int = 0, logit_clip: float | None = None
) -> str:
    """The backend :func:`attend_window` runs for a ``length``-step window: ``sliding_sink`` without a clip, whose
    sink steps never leave the window, is the plain sliding window, which sdpa's fused kernels run faster."""
    if backend == "sliding_sink" and logit_clip is None and (sink == 0 or length <= context):
        return "sdpa"
    return backend


def attend_window(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    context: int,
    dropout_p: float,
    backend: str,
    sink: int = 0,
    logit_clip: float | None = None,
) -> torch.Tensor:
    """Causal attention where each step sees itself and the ``context - 1`` steps before it.

    Args:
        q, k, v: (B, L, H, d).
        context: steps visible to each query; windows no longer than it are plainly causal.
        dropout_p: attention dropout (pass 0 in eval mode).
        backend: ``sdpa``, ``flash``, ``flex`` or ``sliding_sink`` (already resolved for the device).
        sink: ``sliding_sink`` only: the first ``sink`` steps are visible to every later step too.
        logit_clip: ``sliding_sink`` only: clamp the logits to [-logit_clip, logit_clip] (None: no clip).

    Returns:
        (B, L, H, d).
    """
    length = q.shape[1]
    backend = window_backend(backend, length=length, context=context, sink=sink, logit_clip=logit_clip)
    if backend == "sliding_sink":
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        mask = _window_mask(length, context, q.device, sink)
        out = masked_attention(qt, kt, vt, mask, logit_clip=logit_clip, dropout_p=dropout_p)
        return out.transpose(1, 2)
    if backend == "flash":
        from flash_attn import flash_attn_func

        window = (context - 1, 0) if length > context else (-1, -1)
        out = flash_attn_func(
            q.to(torch.bfloat16),
            k.to(torch.bfloat16),
            v.to(torch.bfloat16),
            dropout_p=dropout_p,
            causal=True,
            window_size=window,
        )
        return out.to(q.dtype)
    if backend == "sdpa" and runs_in_blocks(q, dropout_p):
        return attend_blocks(q, k, v, context=context)
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    if backend == "flex":
        block_mask = _flex_block_mask(length, context, q.device)
        return _flex_function(q.device.type)(qt, kt, vt, block_mask=block_mask).transpose(1, 2)
    if length <= context:
        out = F.scaled_dot_product_attention(qt, kt, vt, dropout_p=dropout_p, is_causal=True)
    else:
        mask = _window_mask(length, context, q.device)
        out = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, dropout_p=dropout_p)
    return out.transpose(1, 2)


def runs_in_blocks(q: torch.Tensor, dropout_p: float) -> bool:
    """Whether the ``sdpa`` backend runs as :func:`attend_blocks` for queries ``q``: bf16 or fp16 on a CPU, without
    attention dropout, eagerly (not traced, exported or compiled: the blocks are planned in Python)."""
    return (
        q.device.type == "cpu"
        and q.dtype in (torch.bfloat16, torch.float16)
        and dropout_p == 0
        and not torch.jit.is_tracing()
        and not torch.compiler.is_compiling()
        and not torch.compiler.is_exporting()
        and hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward")
    )


def attend_blocks(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    context: int,
    real: RealSteps | None = None,
    block: int = QUERY_BLOCK,
) -> torch.Tensor:
    """:func:`attend_window`'s sliding causal attention (``sdpa``) computed in fp32 by torch's CPU flash kernel,
    one call per block of ``block`` queries, each over only the keys its queries may see.

    The kernel computes every key of a call (its causal flag skips no work below 512 keys), so one call over a
    window costs all L x L scores. A block of queries ``[a, b)`` needs keys ``[a - context + 1, b)`` only, which
    leaves of the causal upper triangle only the blocks' diagonal squares. With ``real``, the window's rows are
    laid out longest first and a block runs only for the rows still real at ``a``, and the real steps go into
    that layout (and come back) without a padded copy in between. The kernel's bf16 backward runs its small
    matmuls into bf16 gradients, 2-3x slower than fp32 on an AVX-512-bf16 CPU, so the blocks run in fp32 for
    bf16 or fp16 inputs; results and gradients return in the inputs' dtype.

    Args:
        q, k, v: (B, L, H, d) windows, or with ``real`` (1, N, H, d) their real steps (:meth:`RealSteps.take`).
        context: steps visible to each query.
        real: the windows' real steps; their padding must be a suffix (:meth:`RealSteps.of_window`).
        block: queries per kernel call.

    Returns:
        q's layout and dtype.
    """
    layout = _BlockLayout.of(q, real)
    return _BlockedAttention.apply(q, k, v, layout, context, block)


class _BlockLayout(NamedTuple):
    """Where :func:`attend_blocks` computes: a (batch, length) window whose rows run longest first."""

    batch: int
    length: int
    row_lengths: list[int]
    """Real steps per row of the layout (longest first)."""
    places: torch.Tensor | None
    """(N,) flat place in the layout of each given step (None: the steps are the layout, rows as given)."""

    @classmethod
    def of(cls, q: torch.Tensor, real: RealSteps | None) -> _BlockLayout:
        if real is None:
            batch, length = q.shape[:2]
            return cls(batch, length, [length] * batch, None)
        lengths = real.row_lengths
        order = torch.argsort(lengths, descending=True, stable=True)  # ties keep their order
        row_in_layout = torch.argsort(order)
        rows, steps = real.index // real.steps, real.index % real.steps
        places = row_in_layout[rows] * real.steps + steps
        return cls(real.batch, real.steps, lengths[order].tolist(), places)

    def to_layout(self, x: torch.Tensor) -> torch.Tensor:
        """Given steps (N, ..., H, d) as the fp32 (batch, length, H, d) layout, zeros at padding."""
        heads = x.shape[-2:]
        if self.places is None:
            return x.reshape(self.batch, self.length, *heads).to(
                torch.float32, memory_format=torch.contiguous_format
            )
        out = x.new_zeros((self.batch * self.length, *heads), dtype=torch.float32)
        out.index_copy_(0, self.places, x.reshape(-1, *heads).to(torch.float32))
        return out.view(self.batch, self.length, *heads)

    def from_layout(self, x32: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """Inverse of :meth:`to_layout`: the given steps' values in ``like``'s shape and dtype."""
        if self.places is not None:
            x32 = x32.reshape(-1, *x32.shape[-2:]).index_select(0, self.places)
        return x32.to(like.dtype).reshape(like.shape)


class _BlockedAttention(torch.autograd.Function):
    """The autograd of :func:`attend_blocks`: forward and backward call the kernel once per block."""

    @staticmethod
    def forward(
        ctx: Any,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        layout: _BlockLayout,
        context: int,
        block: int,
    ) -> torch.Tensor:
        mask = _additive_window_mask(layout.length, context, q.device)
        q32, k32, v32 = (layout.to_layout(t) for t in (q, k, v))
        out32 = torch.zeros_like(q32)
        # (rows, queries, keys, logsumexp) of each block; the rows of a block are a prefix (longest first).
        plan = []
        for start in range(0, max(layout.row_lengths, default=0), block):
            rows = sum(1 for n in layout.row_lengths if n > start)
            queries = slice(start, min(start + block, layout.length))
            keys = slice(max(0, start - context + 1), queries.stop)
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                _heads_first(q32[:rows, queries]),
                _heads_first(k32[:rows, keys]),
                _heads_first(v32[:rows, keys]),
                attn_mask=mask[queries, keys],
            )
            out32[:rows, queries] = out.transpose(1, 2)
            plan.append((rows, queries, keys, lse))
        ctx.plan, ctx.layout = plan, layout
        ctx.save_for_backward(q32, k32, v32, out32, mask)
        return layout.from_layout(out32, q)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        q32, k32, v32, out32, mask = ctx.saved_tensors
        layout: _BlockLayout = ctx.layout
        grad32 = layout.to_layout(grad)
        dq, dk, dv = (torch.zeros_like(t) for t in (q32, k32, v32))
        for rows, queries, keys, lse in ctx.plan:
            gq, gk, gv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                _heads_first(grad32[:rows, queries]),
                _heads_first(q32[:rows, queries]),
                _heads_first(k32[:rows, keys]),
                _heads_first(v32[:rows, keys]),
                _heads_first(out32[:rows, queries]),
                lse,
                0.0,
                False,
                attn_mask=mask[queries, keys],
            )
            dq[:rows, queries] = gq.transpose(1, 2)  # query blocks are disjoint; their key ranges overlap
            dk[:rows, keys] += gk.transpose(1, 2)
            dv[:rows, keys] += gv.transpose(1, 2)
        return (*(layout.from_layout(t, grad) for t in (dq, dk, dv)), None, None, None)


def _heads_first(x: torch.Tensor) -> torch.Tensor:
    """(B, L, H, d) as the kernel's (B, H, L, d) view."""
    return x.transpose(1, 2)


def attend_cached(
    q: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    valid: torch.Tensor,
    *,
    backend: str,
    groups: tuple[RowGroup, ...] | None = None,
    logit_clip: float | None = None,
) -> torch.Tensor:
    """One query per row attending to the first ``valid[b]`` slots of its cache.

    Every valid slot is visible: a cache holds exactly the steps its rows may see (with ``sliding_sink``, the
    sink steps and the window; see :class:`~amago_nets.kv_cache.KVCache`).

    Args:
        q: (B, 1, H, d) query of the new step.
        key_cache, value_cache: (B, context, H, d) of any strides, the new step already written.
        valid: (B,) number of valid slots per row (at least 1).
        backend: ``flash`` uses ``flash_attn_with_kvcache``; ``sdpa``, ``flex`` and ``sliding_sink`` attend
            per row group.
        groups: contiguous runs of rows (:func:`~amago_nets.row_groups.plan_row_groups` of ``valid``); pass
            one plan to every layer of a step to build it once. Built here when None.
        logit_clip: clamp the logits to [-logit_clip, logit_clip] (``sliding_sink``; None: no clip).

    Returns:
        (B, 1, H, d).
    """
    if backend == "flash":
        from flash_attn import flash_attn_with_kvcache

        # The kernel already stops at each row's own length, so no grouping is needed.
        out = flash_attn_with_kvcache(
            q.to(key_cache.dtype), key_cache, value_cache, cache_seqlens=valid.to(torch.int32), causal=True
        )
        return out.to(q.dtype)
    if groups is None:
        groups = plan_row_groups(valid)
    # Each group reads its rows' caches only up to its own longest row, so a step costs about what the
    # rows' own lengths need rather than every row at the batch's longest length.
    outs = [_attend_group(q, key_cache, value_cache, group, logit_clip) for group in groups]
    return outs[0] if len(outs) == 1 else torch.cat(outs)


def _attend_group(
    q: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    group: RowGroup,
    logit_clip: float | None,
) -> torch.Tensor:
    """(G, 1, H, d) output of one row group, reading only its first ``group.used`` slots (views, no copies)."""
    rows = slice(group.start, group.stop)
    q = q[rows]
    keys = key_cache[rows, : group.used].to(q.dtype).transpose(1, 2)
    values = value_cache[rows, : group.used].to(q.dtype).transpose(1, 2)
    out = masked_attention(q.transpose(1, 2), keys, values, group.mask, logit_clip=logit_clip)
    return out.transpose(1, 2)


@lru_cache(maxsize=64)
def _flex_block_mask(length: int, context: int, device: torch.device) -> Any:
    """flex's BlockMask for the sliding causal window (cached: building one costs far more than using it)."""
    from torch.nn.attention.flex_attention import create_block_mask

    # flex calls a mask_mod with (batch, head, q_idx, kv_idx) index tensors.
    def sliding_causal(
        batch: torch.Tensor, head: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor
    ) -> torch.Tensor:
        return (q_idx >= kv_idx) & (q_idx - kv_idx < context)

    return create_block_mask(sliding_causal, None, None, length, length, device=device)


@lru_cache(maxsize=4)
def _flex_function(device_type: str) -> Callable[..., torch.Tensor]:
    from torch.nn.attention.flex_attention import flex_attention

    # Compiled flex fuses the kernel on CUDA; on CPU compilation costs seconds per shape, so eager is used.
    if device_type == "cuda":
        return torch.compile(flex_attention, dynamic=False)
    return flex_attention
