"""The ``mingru`` trajectory encoder's spec and config. Torch-free: ``amago list`` imports this file.

minGRU is from Feng, Tung, Ahmed, Bengio and Hajimirsadeghi, "Were RNNs All We Needed?" (2024).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec


class MinGRUConfig(ComponentConfig):
    """Deep minGRU (Feng et al. 2024): pre-norm residual blocks of a minGRU and a small MLP.

    The minGRU's gates depend on the current input only, so a training window runs as one parallel scan and a
    rollout step updates a fixed-size state.
    """

    kind: Literal["mingru"] = "mingru"
    """Registered name of this trajectory encoder."""
    d_model: int = Field(128, ge=1)
    """Width of the residual stream and of the output. 128 keeps a CPU rollout step cheap and is as wide as
    the timestep embeddings amago's small presets produce."""
    n_layers: int = Field(2, ge=1)
    """Number of blocks (norm → minGRU → residual, norm → MLP → residual). Two, as a small stack: the
    second layer's gates see what the first one remembered, which one layer of a gate-only RNN cannot."""
    expansion: float = Field(1.0, gt=0)
    """Width of each minGRU's state as a multiple of d_model (the paper's expansion factor), rounded to an
    integer. 1.0 is the cheapest; the state is the only memory, so raise it for tasks that must hold more."""
    mlp_ratio: int = Field(2, ge=1)
    """Hidden width of each block's MLP as a multiple of d_model. 2 keeps the MLP small next to the minGRU."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    """Dropout on each block's two residual branches during training. 0 by default: RL targets are noisy
    enough that small models rarely need it."""

    @property
    def d_hidden(self) -> int:
        """Width of each minGRU's state: ``round(expansion × d_model)``."""
        return round(self.expansion * self.d_model)

    @model_validator(mode="after")
    def _check_hidden(self) -> MinGRUConfig:
        if self.d_hidden < 1:
            msg = (
                f"mingru: expansion={self.expansion} × d_model={self.d_model} rounds to a state of width "
                f"{self.d_hidden}; raise expansion or d_model so the product is at least 1."
            )
            raise ValueError(msg)
        return self

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide layer."""
        return {"d_model": 16, "n_layers": 1}


MINGRU_SPEC = ComponentSpec(
    name="mingru",
    group="amago.traj_encoders",
    summary="minGRU (Feng et al. 2024): gate-only GRU; parallel scan, O(1) rollout steps.",
    config=MinGRUConfig,
    factory="amago_memories.mingru.encoder:MinGRUTrajEncoder",
)
"""The ``mingru`` trajectory encoder (entry point ``amago.traj_encoders``)."""
