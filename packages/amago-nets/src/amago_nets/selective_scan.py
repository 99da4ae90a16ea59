"""Mamba's selective scan in pure PyTorch: ``h_t = exp(dt_t·A) ⊙ h_{t-1} + dt_t·B_t·x_t``, ``y_t = C_t·h_t + D·x_t``.

Two forms compute the same thing: a sequential loop over L steps (the reference) and a chunked scan that scans
all chunks at once and carries the state between chunks, in about ``2·chunk + L/chunk`` steps. Decays are
multiplied, never divided, so the chunked form is as stable as the loop. ``mamba_ssm``'s CUDA kernel is used
instead when it is installed and the inputs are on a GPU.
"""

from __future__ import annotations

import importlib.util

import torch


def mamba_kernel_available() -> bool:
    """True when ``mamba_ssm`` is installed and a CUDA device exists."""
    return torch.cuda.is_available() and importlib.util.find_spec("mamba_ssm") is not None


def _scan_loop(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor | None,
    h: torch.Tensor,
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Steps the recurrence along dim -2 of x/dt (..., T, d_inner) and B/C (..., T, d_state).

    Per-step slices come from ``unbind`` (whose backward is one stack), never from indexing a large
    (..., T, d_inner, d_state) tensor, whose backward would allocate a full-size gradient per step.

    Returns:
        The per-step outputs ``C_t·h_t`` (empty when ``C`` is None) and the final state.
    """
    outputs = []
    c_steps = C.unbind(-2) if C is not None else [None] * x.shape[-2]
    for x_t, dt_t, b_t, c_t in zip(x.unbind(-2), dt.unbind(-2), B.unbind(-2), c_steps, strict=True):
        h = torch.exp(dt_t.unsqueeze(-1) * A) * h + (dt_t * x_t).unsqueeze(-1) * b_t.unsqueeze(-2)
        if c_t is not None:
            outputs.append((h * c_t.unsqueeze(-2)).sum(-1))
    return outputs, h


def scan_sequential(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor,
    h0: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference loop over time.

    Args:
        x, dt: (batch, L, d_inner) inputs and positive step sizes.
        A: (d_inner, d_state) negative state matrix (diagonal per channel).
        B, C: (batch, L, d_state) input and output projections.
        D: (d_inner,) skip connection.
        h0: (batch, d_inner, d_state) initial state (zeros when None).

    Returns:
        y (batch, L, d_inner) and the final state (batch, d_inner, d_state).
    """
    h = x.new_zeros(x.shape[0], x.shape[2], A.shape[1]) if h0 is None else h0
    outputs, h = _scan_loop(x, dt, A, B, C, h)
    return torch.stack(outputs, dim=1) + D * x, h


def scan_chunked(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor,
    h0: torch.Tensor | None = None,
    chunk_size: int = 16,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Same result as :func:`scan_sequential` in ``2·chunk_size + n_chunks`` sequential steps instead of ``L``.

    1. every chunk is scanned from a zero state, all chunks at once, giving each chunk's end state;
    2. a short loop over chunks carries the true state into each chunk, using each chunk's total decay
       ``exp(A·Σdt)`` (closed form, since the decay is a product of exponentials);
    3. every chunk is scanned again from its true initial state, all chunks at once, giving the outputs.
    """
    batch, length, d_inner = x.shape
    chunk = max(1, min(chunk_size, length))
    n_chunks = -(-length // chunk)
    padding = n_chunks * chunk - length
    if padding:
        # Padded steps have dt = 0: decay exp(0) = 1 and no input, so they leave the state unchanged.
        x, dt, B, C = (torch.nn.functional.pad(t, (0, 0, 0, padding)) for t in (x, dt, B, C))
    x_c, dt_c = (t.reshape(batch, n_chunks, chunk, d_inner) for t in (x, dt))
    b_c, c_c = (t.reshape(batch, n_chunks, chunk, -1) for t in (B, C))
    zeros = x.new_zeros(batch, n_chunks, d_inner, A.shape[1])
    _, local_ends = _scan_loop(x_c, dt_c, A, b_c, None, zeros)
    chunk_decay = torch.exp(dt_c.sum(dim=2).unsqueeze(-1) * A)
    h = x.new_zeros(batch, d_inner, A.shape[1]) if h0 is None else h0
    starts = []
    for c in range(n_chunks):
        starts.append(h)
        h = local_ends[:, c] + chunk_decay[:, c] * h
    outputs, _ = _scan_loop(x_c, dt_c, A, b_c, c_c, torch.stack(starts, dim=1))
    y = torch.stack(outputs, dim=2).reshape(batch, n_chunks * chunk, d_inner)[:, :length]
    return y + D * x[:, :length], h


def scan_kernel(
    x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, D: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``mamba_ssm``'s fused CUDA selective scan from a zero state (same shapes as :func:`scan_sequential`)."""
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    y, last_state = selective_scan_fn(
        x.transpose(1, 2).contiguous(),
        dt.transpose(1, 2).contiguous(),
        A.contiguous(),
        B.transpose(1, 2).contiguous(),
        C.transpose(1, 2).contiguous(),
        D.float(),
        return_last_state=True,
    )
    return y.transpose(1, 2), last_state


def scan_step(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    C: torch.Tensor,
    D: torch.Tensor,
    h: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One recurrent step: x, dt (batch, d_inner); B, C (batch, d_state); h (batch, d_inner, d_state)."""
    h = torch.exp(dt.unsqueeze(-1) * A) * h + (dt * x).unsqueeze(-1) * B.unsqueeze(1)
    return torch.einsum("bdn,bn->bd", h, C) + D * x, h
