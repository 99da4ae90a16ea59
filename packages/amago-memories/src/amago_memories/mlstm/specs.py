"""The ``mlstm`` trajectory encoder's spec and config. Torch-free: ``amago list`` imports this file.

The mLSTM is xLSTM's matrix-memory cell, from Beck, Pöppel, Spanring, Auer, Prudnikova, Kopp, Klambauer,
Brandstetter and Hochreiter, "xLSTM: Extended Long Short-Term Memory" (NeurIPS 2024).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec


class MLSTMConfig(ComponentConfig):
    """Stacked mLSTM blocks (Beck et al. 2024): a multi-head matrix memory with exponential gating.

    Training windows use the cell's parallel (masked matrix) form, O(L²) per window; rollout steps use its
    recurrent form on a fixed-size state.
    """

    kind: Literal["mlstm"] = "mlstm"
    """Registered name of this trajectory encoder."""
    d_model: int = Field(128, ge=1)
    """Width of the residual stream and of the output. 128 keeps a CPU rollout step cheap and is as wide as
    the timestep embeddings amago's small presets produce."""
    n_heads: int = Field(4, ge=1)
    """Number of heads, each with its own matrix memory and gates; must divide d_model. Four heads of
    proj_factor × d_model / n_heads = 64 channels each by default: each head's memory is head_dim² numbers per
    layer per env, so more, narrower heads make rollout states smaller."""
    n_layers: int = Field(2, ge=1)
    """Number of mLSTM blocks. Two, as a small stack for RL memory tasks."""
    proj_factor: int = Field(2, ge=1)
    """Up-projection of each block: the cell works on proj_factor × d_model channels (the paper's mLSTM
    block uses 2)."""
    conv_kernel: int = Field(4, ge=0)
    """Width of the causal depthwise convolution in front of the query/key path (the paper's block uses 4); 0
    leaves it out. Rollouts keep each layer's last conv_kernel − 1 inputs in the state, so steps stay O(1)."""
    forget_gate: Literal["sigmoid", "exp"] = "sigmoid"
    """Forget gate activation: ``sigmoid`` (f ≤ 1, the memory only decays; the paper's default for the mLSTM)
    or ``exp`` (the paper's alternative; the stabiliser keeps both finite)."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    """Dropout on each block's output before the residual, during training. 0 by default: RL targets are noisy
    enough that small models rarely need it."""

    @property
    def d_inner(self) -> int:
        """Channels the cell works on: ``proj_factor × d_model``."""
        return self.proj_factor * self.d_model

    @property
    def head_dim(self) -> int:
        """Channels per head: ``d_inner / n_heads``."""
        return self.d_inner // self.n_heads

    @model_validator(mode="after")
    def _check_heads(self) -> MLSTMConfig:
        if self.d_model % self.n_heads != 0:
            msg = (
                f"mlstm: n_heads={self.n_heads} must divide d_model={self.d_model}; change one of them "
                f"(e.g. n_heads={_largest_divisor_at_most(self.d_model, self.n_heads)})."
            )
            raise ValueError(msg)
        return self

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide layer of 2 heads."""
        return {"d_model": 16, "n_heads": 2, "n_layers": 1}


def _largest_divisor_at_most(number: int, bound: int) -> int:
    """The largest divisor of ``number`` that is at most ``bound`` (a valid n_heads to suggest)."""
    return max(d for d in range(1, min(number, bound) + 1) if number % d == 0)


MLSTM_SPEC = ComponentSpec(
    name="mlstm",
    group="amago.traj_encoders",
    summary="mLSTM (Beck et al. 2024): xLSTM's multi-head matrix memory; parallel form, O(1) rollout steps.",
    config=MLSTMConfig,
    factory="amago_memories.mlstm.encoder:MLSTMTrajEncoder",
)
"""The ``mlstm`` trajectory encoder (entry point ``amago.traj_encoders``)."""
