"""Spec and config of the ``gtrxl`` trajectory encoder. Torch-free: ``amago list`` imports this file.

The network is "Stabilizing Transformers for Reinforcement Learning" (Parisotto, Song, Rae, Pascanu, Gulcehre,
Jayakumar, Jaderberg, Kaufman, Clark, Noury, Botvinick, Heess, Hadsell, ICML 2020).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec


class GTrXLConfig(ComponentConfig):
    """Gated Transformer-XL (Parisotto et al. 2020): LayerNorm on each sublayer's input, GRU-type gates in place
    of both residual connections, and Transformer-XL's relative-position attention over a fixed memory.

    Each position of a layer attends to itself and the previous ``memory_len`` inputs of that layer, in
    training windows of any length (a banded causal mask) and in rollouts (a fixed-size buffer of the last
    ``memory_len`` keys and values per layer), so both compute the same thing step for step.
    """

    kind: Literal["gtrxl"] = "gtrxl"
    """Registered name of this trajectory encoder."""
    d_model: int = Field(128, ge=1)
    """Width of the residual stream and of the output. 128 is a small model that trains quickly on a CPU."""
    n_heads: int = Field(4, ge=1)
    """Number of attention heads (must divide d_model): four 32-wide heads."""
    n_layers: int = Field(2, ge=1)
    """Number of gated Transformer-XL blocks. Two keep CPU rollout steps cheap; the memory reaches back
    ``n_layers * memory_len`` steps, so more layers also see further."""
    d_ff: int = Field(256, ge=1)
    """Hidden width of each position-wise feed-forward sublayer (2 x d_model, to keep CPU updates fast)."""
    memory_len: int | None = Field(None, ge=0)
    """Steps back each layer attends to, besides its own step (Transformer-XL's memory). None (default):
    ``max_seq_len - 1``, so the last step of a training window sees the whole window. Windows longer than
    ``memory_len + 1`` slide the same band as rollouts; a rollout keeps this many keys and values per layer."""
    gate_bias: float = Field(2.0, ge=0.0)
    """``b_g``: subtracted inside each gate's update ``z = sigmoid(W_z y + U_z x - b_g)``, so the gates start
    mostly closed and each block starts close to the identity, which the paper found to speed up learning
    (its default, 2, lets ``sigmoid(-2) = 0.12`` of the sublayer through at first)."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    """Dropout on attention probabilities and sublayer outputs (training only). Off by default: RL's targets
    move anyway and small models rarely overfit them."""
    time_embedding: bool = False
    """Add a fixed sinusoidal embedding of the absolute episode time (``time_idxs``) to the input. Off by
    default, as in the paper: relative positions already order the steps in memory. Turn it on for tasks where
    the absolute time matters beyond the memory (e.g. a long corridor before a decision)."""

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide layer of 2 heads."""
        return {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1}

    @model_validator(mode="after")
    def _check_heads(self) -> GTrXLConfig:
        if self.d_model % self.n_heads != 0:
            msg = (
                f"gtrxl: n_heads={self.n_heads} must divide d_model={self.d_model}; "
                "change one of them (e.g. d_model=128, n_heads=4)."
            )
            raise ValueError(msg)
        return self


GTRXL_SPEC = ComponentSpec(
    name="gtrxl",
    group="amago.traj_encoders",
    summary="GTrXL (Parisotto et al. 2020): gated Transformer-XL; fixed memory, constant-cost rollout steps",
    config=GTrXLConfig,
    factory="amago_memories.gtrxl.encoder:GTrXLTrajEncoder",
)
