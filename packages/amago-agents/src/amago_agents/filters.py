"""Advantage filters of filtered behaviour cloning: weights ``f(A)`` for ``-f(A) log pi(a_buffer | s)``."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from amago_agents.specs import BinaryFilterConfig, ExpFilterConfig, FilterConfig, LeakyReluFilterConfig

AdvantageFilter = Callable[[torch.Tensor], torch.Tensor]
"""Maps advantages of any shape to non-negative weights of the same shape."""


def binary_filter(adv: torch.Tensor, threshold: float = 0.0) -> torch.Tensor:
    """``1[A > threshold]`` as floats."""
    return (adv > threshold).to(adv.dtype)


def exp_filter(
    adv: torch.Tensor,
    beta: float = 1.0,
    adv_clip_low: float | None = None,
    adv_clip_high: float | None = None,
    weight_clip_low: float | None = 1e-7,
    weight_clip_high: float | None = None,
) -> torch.Tensor:
    """``clip(exp(beta · clip(A)), weight_clip_low, weight_clip_high)`` (AWAC / CRR-exp)."""
    if adv_clip_low is not None or adv_clip_high is not None:
        adv = adv.clamp(adv_clip_low, adv_clip_high)
    weights = torch.exp(beta * adv)
    if weight_clip_low is not None or weight_clip_high is not None:
        weights = weights.clamp(weight_clip_low, weight_clip_high)
    return weights


def leaky_relu_filter(
    adv: torch.Tensor,
    beta: float = 2.0,
    tau: float = 1e-2,
    negative_slope: float = 0.05,
    target_f0: float = 1e-2,
    clip_low: float = 1e-7,
    clip_high: float = 10.0,
    add_binary: bool = True,
) -> torch.Tensor:
    """A leaky ReLU of the scaled advantage, shifted so that ``f(0) ≈ target_f0``, clipped, plus ``1[A > 0]``.

    Below ``tau`` the weight falls slowly (slope ``negative_slope / beta``) instead of to zero, so poor actions
    keep a little imitation weight; above it the weight rises by 1 per ``beta`` of advantage.
    """
    # At A = 0 the leaky ReLU gives -negative_slope·tau/beta; this bias cancels it to hit target_f0.
    bias = target_f0 + negative_slope * tau / beta
    weights = (bias + F.leaky_relu((adv - tau) / beta, negative_slope)).clamp(clip_low, clip_high)
    if add_binary:
        weights = weights + (adv > 0).to(adv.dtype)
    return weights


def make_filter(config: FilterConfig) -> AdvantageFilter:
    """The filter function a config describes.

    Raises:
        TypeError: ``config`` is not one of the filter configs.
    """
    options = config.model_dump(exclude={"type"})
    if isinstance(config, BinaryFilterConfig):
        return lambda adv: binary_filter(adv, **options)
    if isinstance(config, ExpFilterConfig):
        return lambda adv: exp_filter(adv, **options)
    if isinstance(config, LeakyReluFilterConfig):
        return lambda adv: leaky_relu_filter(adv, **options)
    msg = f"unknown advantage filter config {type(config).__name__}; use type = binary, exp or leaky_relu."
    raise TypeError(msg)
