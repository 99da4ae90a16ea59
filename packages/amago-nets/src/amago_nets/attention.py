"""Attention backends: one causal (optionally sliding-window) attention over a window, and one cached step.

Tensors use the (B, L, H, head_dim) layout of flash-attn; ``context`` is how many steps (itself included)
each query may see. Every backend computes the same function, so they are interchangeable by config.
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

BACKENDS = ("sdpa", "flash", "flex")


def flash_available() -> bool:
    """True when flash-attn is installed and a CUDA device exists."""
    return torch.cuda.is_available() and importlib.util.find_spec("flash_attn") is not None


def resolve_backend(requested: str, device: torch.device, *, needs_grad: bool = False) -> str:
    """The backend that will actually run on ``device``; falls back to ``sdpa`` (same results) with a warning.

    ``flash`` needs flash-attn on CUDA. ``flex`` runs anywhere without gradients, but torch has no CPU
    backward for it, so CPU training falls back.

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


def _window_mask(length: int, context: int, device: torch.device) -> torch.Tensor:
    """(L, L) bool: query i may see key j when ``i - context < j <= i``."""
    idx = torch.arange(length, device=device)
    delta = idx[:, None] - idx[None, :]
    return (delta >= 0) & (delta < context)


def attend_window(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, context: int, dropout_p: float, backend: str
) -> torch.Tensor:
    """Causal attention where each step sees itself and the ``context - 1`` steps before it.

    Args:
        q, k, v: (B, L, H, d).
        context: steps visible to each query; windows no longer than it are plainly causal.
        dropout_p: attention dropout (pass 0 in eval mode).
        backend: ``sdpa``, ``flash`` or ``flex`` (already resolved for the device).

    Returns:
        (B, L, H, d).
    """
    length = q.shape[1]
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
) -> torch.Tensor:
    """One query per row attending to the first ``valid[b]`` slots of its cache.

    Args:
        q: (B, 1, H, d) query of the new step.
        key_cache, value_cache: (B, context, H, d) of any strides, the new step already written.
        valid: (B,) number of valid slots per row (at least 1).
        backend: ``flash`` uses ``flash_attn_with_kvcache``; ``sdpa`` and ``flex`` use sdpa per row group.
        groups: contiguous runs of rows (:func:`~amago_nets.row_groups.plan_row_groups` of ``valid``); pass
            one plan to every layer of a step to build it once. Built here when None.

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
    outs = [_attend_group(q, key_cache, value_cache, group) for group in groups]
    return outs[0] if len(outs) == 1 else torch.cat(outs)


def _attend_group(
    q: torch.Tensor, key_cache: torch.Tensor, value_cache: torch.Tensor, group: RowGroup
) -> torch.Tensor:
    """(G, 1, H, d) output of one row group, reading only its first ``group.used`` slots (views, no copies)."""
    rows = slice(group.start, group.stop)
    q = q[rows]
    keys = key_cache[rows, : group.used].to(q.dtype).transpose(1, 2)
    values = value_cache[rows, : group.used].to(q.dtype).transpose(1, 2)
    out = F.scaled_dot_product_attention(q.transpose(1, 2), keys, values, attn_mask=group.mask)
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
