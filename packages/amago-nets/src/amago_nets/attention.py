"""Attention backends: one causal (optionally sliding-window) attention over a window, and one cached step.

Tensors use the (B, L, H, head_dim) layout of flash-attn; ``context`` is how many steps (itself included)
each query may see. ``sdpa``, ``flash`` and ``flex`` compute the same function, so they are interchangeable
by config. ``sliding_sink`` (AMAGO's ``ClippedSlidingSinkAttention``) changes the function: the first
``sink`` steps stay visible besides the window, and logits may be clipped.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

import torch
import torch.nn.functional as F

from amago_nets.row_groups import RowGroup, plan_row_groups

BACKENDS = ("sdpa", "flash", "flex", "sliding_sink")


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
    if backend == "sliding_sink" and logit_clip is None and (sink == 0 or length <= context):
        # Without a clip, and with no sink step ever outside the window, this is the plain sliding window,
        # which sdpa's fused kernels run faster when they know the mask is causal.
        backend = "sdpa"
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
