"""AMAGO's advantage filters with AMAGO's keyword names, computed by amago-agents' filters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from amago_agents import filters

if TYPE_CHECKING:
    import torch


def exp_filter(
    adv: torch.Tensor,
    beta: float = 1.0,
    clip_adv_low: float | None = None,
    clip_adv_high: float | None = None,
    clip_weights_low: float | None = 1e-7,
    clip_weights_high: float | None = None,
) -> torch.Tensor:
    """AMAGO's ``exp_filter``: ``clip(exp(beta * clip(A, clip_adv_*)), clip_weights_*)`` (amago-agents' filter,
    whose keywords are ``adv_clip_*`` / ``weight_clip_*``)."""
    return filters.exp_filter(
        adv,
        beta=beta,
        adv_clip_low=clip_adv_low,
        adv_clip_high=clip_adv_high,
        weight_clip_low=clip_weights_low,
        weight_clip_high=clip_weights_high,
    )


__all__ = ["exp_filter"]
