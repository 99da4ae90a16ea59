"""Torch-free config and spec of the ``ffm`` trajectory encoder (``amago list`` imports this file only).

The network is Fast and Forgetful Memory: S. Morad, R. Kortvelesy, S. Liwicki, A. Prorok, "Reinforcement
Learning with Fast and Forgetful Memory", NeurIPS 2023. It lives in :mod:`amago_memories.ffm.encoder`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec


class FFMConfig(ComponentConfig):
    """Fast and Forgetful Memory (Morad et al., NeurIPS 2023): a complex-decay aggregator in a gated cell.

    Each layer projects its input to ``d_memory`` features, adds them into a ``d_memory`` x ``d_context``
    complex state that decays by ``exp(-|alpha| + i omega)`` every step, and reads the state out through the
    paper's gated skip connection. Training windows run a parallel scan; rollout steps cost O(1).
    """

    kind: Literal["ffm"] = "ffm"
    """Registered name of this trajectory encoder."""
    d_model: int = Field(128, ge=1)
    """Output size of every layer, and so of the encoder. 128 keeps CPU runs fast and is wide enough for the
    read-out of the default 32 x 4 complex state (256 real features)."""
    d_memory: int = Field(32, ge=1)
    """``m`` in the paper: how many input features the aggregator keeps, each with its own decay rate (and so
    time horizon). 32 spreads the horizons about 33 steps apart over the default 1..1024."""
    d_context: int = Field(4, ge=1)
    """``c`` in the paper: how many oscillation frequencies each memory feature is kept at (the state holds
    ``d_memory * d_context`` complex numbers per layer). 4 is small on purpose: the state, and the read-out's
    input, grow with ``d_memory * d_context``."""
    n_layers: int = Field(1, ge=1)
    """Number of stacked FFM cells (the paper uses one; more feed each cell's output to the next)."""
    retention_horizon: float = Field(1024.0, ge=1.0)
    """Longest time horizon of the decay initialisation, in steps: the decay rates ``alpha`` start spread so
    that a memory feature's contribution falls to ``forgotten_at`` after between 1 and this many steps (the
    paper's 1024, longer than most RL episodes' memory needs). Training moves them."""
    forgotten_at: float = Field(0.01, gt=0.0, lt=1.0)
    """Fraction of an input that is left after its feature's time horizon, which sets the initial ``alpha =
    -ln(forgotten_at) / horizon`` (the paper's 0.01)."""
    min_period: float = Field(1.0, gt=0.0)
    """Shortest oscillation period of the initial frequencies, in steps: ``omega = 2 pi / period`` with the
    periods spread linearly over [min_period, max_period] (the paper's 1; a period of 1 step does not rotate,
    so one context channel keeps a plain decaying sum)."""
    max_period: float = Field(1024.0, gt=0.0)
    """Longest oscillation period of the initial frequencies, in steps (the paper's 1024)."""

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide layer over an 8 x 2 memory."""
        return {"d_model": 16, "d_memory": 8, "d_context": 2, "n_layers": 1}

    @model_validator(mode="after")
    def _check_periods(self) -> FFMConfig:
        if self.min_period > self.max_period:
            msg = (
                f"ffm: min_period={self.min_period} is above max_period={self.max_period}; swap them or set "
                "them equal."
            )
            raise ValueError(msg)
        return self


FFM_SPEC = ComponentSpec(
    name="ffm",
    group="amago.traj_encoders",
    summary="FFM (Morad et al. 2023): complex-decay aggregator in a gated cell; parallel scan, O(1) rollout steps.",
    config=FFMConfig,
    factory="amago_memories.ffm.encoder:FFMTrajEncoder",
)
"""The ``ffm`` entry of ``amago.traj_encoders``."""
