"""The parallel training path shared by the linear-recurrent memories: ``h_t = a_t * h_{t-1} + b_t``.

A rollout steps the recurrence one step at a time (O(1) per step); a training window evaluates all of its
steps at once with a log-depth scan, which is what makes these memories fast to train on long windows. The
scan is pure PyTorch (no custom kernel), works for real and complex tensors, and is differentiable.
"""

from __future__ import annotations

import torch


def linear_scan(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """All states of the recurrence ``h_t = a_t * h_{t-1} + b_t`` over the time axis (dim 1).

    Hillis–Steele doubling: after the round with offset ``k`` each position holds the composition of the last
    ``2k`` steps, so ``ceil(log2 L)`` rounds of elementwise work give every ``h_t``. Compared with a sequential
    loop this trades ``log2 L`` times the arithmetic for ``log2 L`` instead of ``L`` dependent steps, which is
    the right trade on both a GPU and a CPU for the window lengths RL memories train on (hundreds of steps).

    Args:
        a: decay, shape ``(B, L, *state)``; a zero at step ``t`` forgets everything before ``t``.
        b: input, the same shape as ``a`` (broadcastable to it).
        h0: state before step 0, shape ``(B, *state)``; None: zeros.

    Returns:
        ``h`` of shape ``(B, L, *state)``, ``h[:, t]`` the state after step ``t``.
    """
    a, b = torch.broadcast_tensors(a, b)
    if h0 is not None:
        # Fold the initial state into the first input, so the scan itself always starts from zero.
        b = torch.cat([b[:, :1] + a[:, :1] * h0.unsqueeze(1), b[:, 1:]], dim=1)
    length, offset = a.shape[1], 1
    while offset < length:
        b = torch.cat([b[:, :offset], b[:, offset:] + a[:, offset:] * b[:, :-offset]], dim=1)
        a = torch.cat([a[:, :offset], a[:, offset:] * a[:, :-offset]], dim=1)
        offset *= 2
    return b


def reset_rows(state: torch.Tensor, dones: object) -> torch.Tensor:
    """``state`` (batch first) with the rows whose ``dones`` is True set to zero, the others untouched.

    Args:
        state: a rollout state, shape ``(B, ...)``.
        dones: per-row episode ends, a numpy array or a tensor of shape ``(B,)`` (or ``(B, 1)``).
    """
    import numpy as np

    mask = dones if torch.is_tensor(dones) else torch.as_tensor(np.asarray(dones))
    mask = mask.to(device=state.device, dtype=torch.bool).reshape(-1, *([1] * (state.dim() - 1)))
    return state.masked_fill(mask, 0)
