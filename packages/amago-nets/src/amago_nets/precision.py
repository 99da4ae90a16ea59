"""Mixed precision's one rule: networks compute in the autocast dtype, the math on their outputs in fp32.

Under bf16 or fp16 autocast, what a network computes (matmuls, convolutions, attention) gains most from the
reduced precision and loses least: a layer's rounding error is small against its weights' noise. What comes after
the networks does not tolerate it: sampling and log-probabilities of the policy distributions (the Beta's
Dirichlet sampler has no bf16 kernel at all), PopArt's running statistics, n-step targets of returns in the
hundreds, two-hot / HL-Gauss labels and the losses. bf16 keeps 8 bits of mantissa, so a return of 300 rounds to a
multiple of 2 and a log-probability of -12.3 to a multiple of 0.06.

So an agent runs its loss inside :func:`full_precision` (autocast off), and each network it calls there inside
:func:`network_precision` (the autocast that was on, back on), whose output :func:`to_full` returns as fp32. A
network called where no autocast is on, or outside any :func:`full_precision` region, runs as it would anyway:
the two contexts only move the boundary, and in fp32 runs they do nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

import torch

AUTOCAST_DEVICES = ("cuda", "cpu", "xpu", "mps")
"""Device types whose autocast state :func:`full_precision` suspends (the ones torch gives an autocast)."""

_suspended: ContextVar[tuple[tuple[str, torch.dtype], ...]] = ContextVar(
    "amago_suspended_autocast", default=()
)
"""The autocasts (device type, dtype) a :func:`full_precision` region switched off, for the networks inside."""


def active_autocasts() -> tuple[tuple[str, torch.dtype], ...]:
    """The autocasts on here: ``(device_type, dtype)`` for each device type whose autocast is enabled."""
    active = []
    for device_type in AUTOCAST_DEVICES:
        try:
            if torch.is_autocast_enabled(device_type):
                active.append((device_type, torch.get_autocast_dtype(device_type)))
        except RuntimeError:  # a device type this torch build has no autocast for
            continue
    return tuple(active)


@contextlib.contextmanager
def full_precision() -> Iterator[None]:
    """Runs the enclosed math in fp32: every autocast that is on is off inside, and remembered for the networks
    that :func:`network_precision` runs inside the region."""
    active = active_autocasts()
    if not active:
        yield
        return
    with _switched(active, enabled=False, remembered=active):
        yield


@contextlib.contextmanager
def network_precision() -> Iterator[None]:
    """Runs a network in the autocast the enclosing :func:`full_precision` region switched off (if any).

    Outside such a region this does nothing: the network runs under whatever autocast is on.
    """
    suspended = _suspended.get()
    if not suspended:
        yield
        return
    # Nothing remembered inside: a full_precision region within the network suspends what is on there.
    with _switched(suspended, enabled=True, remembered=()):
        yield


@contextlib.contextmanager
def _switched(
    autocasts: tuple[tuple[str, torch.dtype], ...],
    *,
    enabled: bool,
    remembered: tuple[tuple[str, torch.dtype], ...],
) -> Iterator[None]:
    """``autocasts`` turned on (in their dtypes) or off inside the block, with ``remembered`` as the suspended
    autocasts there."""
    token = _suspended.set(remembered)
    try:
        with contextlib.ExitStack() as stack:
            for device_type, dtype in autocasts:
                context = (
                    torch.autocast(device_type, dtype=dtype)
                    if enabled
                    else torch.autocast(device_type, enabled=False)
                )
                stack.enter_context(context)
            yield
    finally:
        _suspended.reset(token)


def to_full(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` as fp32 when it is a reduced-precision float (bf16, fp16); anything else unchanged."""
    if tensor.dtype in (torch.bfloat16, torch.float16):
        return tensor.float()
    return tensor
