"""The dtype the memories' recurrences run in, whatever precision the surrounding network runs at."""

from __future__ import annotations

import torch


def recurrence_dtype(dtype: torch.dtype) -> torch.dtype:
    """At least fp32, or ``dtype`` when it is wider (fp64 tests).

    Under bf16 autocast the projections arrive in bf16. A state that decays over hundreds of steps would lose most
    of its mantissa there (bf16 rounds a decay of ``1 - z`` near 1 to exactly 1, and holds whole step counts only
    up to 256), and torch has no complex bf16; so every memory here scans, steps and stores its state in fp32.
    """
    return torch.promote_types(dtype, torch.float32)


def complex_recurrence_dtype(dtype: torch.dtype) -> torch.dtype:
    """The complex dtype whose real and imaginary parts are each :func:`recurrence_dtype` of ``dtype``."""
    return torch.complex128 if recurrence_dtype(dtype) == torch.float64 else torch.complex64
