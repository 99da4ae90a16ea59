"""Torch-free config and spec of the ``lru`` trajectory encoder (``amago list`` imports this file only).

The network is the deep Linear Recurrent Unit: A. Orvieto, S. L. Smith, A. Gu, A. Fernando, C. Gulcehre,
R. Pascanu, S. De, "Resurrecting Recurrent Neural Networks for Long Sequences", ICML 2023. It lives in
:mod:`amago_memories.lru.encoder`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec


class LRUConfig(ComponentConfig):
    """Deep Linear Recurrent Unit (Orvieto et al., ICML 2023): stacked complex diagonal linear recurrences.

    An input projection to ``d_model``, then ``n_layers`` residual blocks (LayerNorm, LRU, GELU, GLU), then a
    LayerNorm. Each LRU keeps ``h_t = lambda * h_{t-1} + gamma * (B x_t)`` over ``d_state`` complex channels,
    with ``lambda`` initialised uniformly on the ring ``r_min <= |lambda| <= r_max``, ``arg lambda <=
    max_phase``. Training windows run a parallel scan; rollout steps cost O(1).
    """

    kind: Literal["lru"] = "lru"
    """Registered name of this trajectory encoder."""
    d_model: int = Field(128, ge=1)
    """Width of the residual stream and of the output (128 keeps CPU runs fast; the paper's models are wider)."""
    d_state: int = Field(128, ge=1)
    """Number of complex recurrent channels of each LRU (``N`` in the paper, which uses N >= H; the rollout
    state is ``n_layers * d_state`` complex numbers)."""
    n_layers: int = Field(2, ge=1)
    """Number of residual LRU blocks (the paper's long-range models stack more; 2 keeps the small networks RL
    trains cheap, and every block adds work to each rollout step)."""
    r_min: float = Field(0.9, ge=0.0, lt=1.0)
    """Smallest initial ``|lambda|``. The paper's generic default is 0; it finds eigenvalues started close to the
    unit circle are what long-range tasks need. 0.9 gives every channel a time scale ``1 / (1 - |lambda|)`` of
    at least 10 steps: RL memory is about what happened many steps ago, while the current step reaches the
    output through the ``D`` skip and the residual path anyway."""
    r_max: float = Field(0.999, gt=0.0, lt=1.0)
    """Largest initial ``|lambda|``. 0.999 reaches time scales of about 1000 steps, the length of long RL
    episodes; it must stay below 1, where the state would not decay."""
    max_phase: float = Field(0.3141592653589793, gt=0.0)
    """Largest initial ``arg lambda``, in radians. pi / 10, the restriction the paper found helps its longest
    task (PathX; its generic default is 2 pi): slowly rotating channels keep events hundreds of steps apart
    distinct, where fast ones alias them."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    """Dropout on each block's output before the residual sum (0: none, the usual choice in off-policy RL)."""

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide block over 16 complex channels."""
        return {"d_model": 16, "d_state": 16, "n_layers": 1}

    @model_validator(mode="after")
    def _check_ring(self) -> LRUConfig:
        if self.r_min > self.r_max:
            msg = (
                f"lru: r_min={self.r_min} is above r_max={self.r_max}; the eigenvalues are initialised on the ring "
                "r_min <= |lambda| <= r_max, so swap them or set them equal."
            )
            raise ValueError(msg)
        return self


LRU_SPEC = ComponentSpec(
    name="lru",
    group="amago.traj_encoders",
    summary="LRU (Orvieto et al. 2023): deep complex diagonal linear recurrence; parallel scan, O(1) rollout steps.",
    config=LRUConfig,
    factory="amago_memories.lru.encoder:LRUTrajEncoder",
)
"""The ``lru`` entry of ``amago.traj_encoders``."""
