"""Spec and config of the ``linear_attention`` trajectory encoder. Torch-free: ``amago list`` imports this file.

The network is "Transformers are RNNs: Fast Autoregressive Transformers with Linear Attention" (Katharopoulos,
Vyas, Pappas, Fleuret, ICML 2020), with an optional per-head decay of the state as in RetNet ("Retentive
Network: A Successor to Transformer for Large Language Models", Sun et al. 2023).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec


def retnet_decays(n_heads: int) -> tuple[float, ...]:
    """RetNet's multi-scale decays ``1 - 2^(-5 - h)`` for heads ``h = 0..n_heads-1``.

    Head 0 forgets with a time constant of about 32 steps and each later head remembers twice as long, so the
    heads cover short and long horizons at once.
    """
    return tuple(1.0 - 2.0 ** (-5 - head) for head in range(n_heads))


class LinearAttentionConfig(ComponentConfig):
    """Causal linear attention (Katharopoulos et al. 2020) in pre-LayerNorm Transformer blocks.

    Each head keeps ``S_t = gamma S_{t-1} + phi(k_t) v_t^T`` and ``z_t = gamma z_{t-1} + phi(k_t)`` with
    ``phi(x) = elu(x) + 1`` and outputs ``phi(q_t)^T S_t / (phi(q_t)^T z_t + eps)``; ``gamma = 1`` (no
    ``decay``) is the paper's exact form. Training windows use the equivalent masked quadratic form, rollouts
    carry ``(S, z)``: a constant cost per step however long the episode.
    """

    kind: Literal["linear_attention"] = "linear_attention"
    """Registered name of this trajectory encoder."""
    d_model: int = Field(128, ge=1)
    """Width of the residual stream and of the output. 128 is a small model that trains quickly on a CPU."""
    n_heads: int = Field(4, ge=1)
    """Number of attention heads (must divide d_model). Four heads of 32 keep each head's state ``S`` at
    32 x 32 numbers, so a rollout step stays cheap."""
    n_layers: int = Field(2, ge=1)
    """Number of Transformer blocks (linear attention, then a feed-forward sublayer). Two are enough for the
    memory tasks amago runs on a CPU and keep rollout steps cheap."""
    d_ff: int = Field(256, ge=1)
    """Hidden width of each feed-forward sublayer (2 x d_model: half the usual 4x, to keep CPU updates fast)."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    """Dropout on the output of each attention and feed-forward sublayer (training only). Off by default:
    RL's targets move anyway and small models rarely overfit them."""
    decay: float | tuple[float, ...] | Literal["retnet"] | None = None
    """Decay ``gamma`` of each head's state, RetNet-style (Sun et al. 2023): ``S_t = gamma S_{t-1} + ...``, so
    a step ``n`` steps back weighs ``gamma^n``. None (default): no decay, the paper's exact form, whose state is
    an unweighted sum over the whole episode. A number in (0, 1]: the same gamma for every head; a list: one
    per head (n_heads entries); ``retnet``: RetNet's ``1 - 2^(-5 - h)`` for head ``h`` (horizons of ~32, 64,
    128, ... steps). Turn it on for long episodes, where an undecayed sum blurs every step into one average."""
    eps: float = Field(1e-6, gt=0.0)
    """Added to the normaliser ``phi(q)^T z``, which is positive but can be tiny at the first steps."""
    time_embedding: bool = True
    """Add a fixed sinusoidal embedding of the absolute episode time (``time_idxs``) to the input. On by
    default: without decay the state is a plain sum, blind to the order of the steps, so time must come with
    the input (amago's Transformer embeds absolute time the same way)."""

    def smoke_options(self) -> dict[str, Any]:
        """One 16-wide layer of 2 heads."""
        return {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1}

    def head_decays(self) -> tuple[float, ...] | None:
        """The decay of each head (n_heads entries), or None without decay."""
        if self.decay is None:
            return None
        if self.decay == "retnet":
            return retnet_decays(self.n_heads)
        if isinstance(self.decay, tuple):
            return self.decay
        return (float(self.decay),) * self.n_heads

    @model_validator(mode="after")
    def _check_shapes(self) -> LinearAttentionConfig:
        if self.d_model % self.n_heads != 0:
            msg = (
                f"linear_attention: n_heads={self.n_heads} must divide d_model={self.d_model}; "
                "change one of them (e.g. d_model=128, n_heads=4)."
            )
            raise ValueError(msg)
        if isinstance(self.decay, tuple) and len(self.decay) != self.n_heads:
            msg = (
                f"linear_attention: decay lists {len(self.decay)} values but there are n_heads={self.n_heads} "
                "heads; give one decay per head, or a single number for all of them."
            )
            raise ValueError(msg)
        decays = self.head_decays() or ()
        if any(not 0.0 < gamma <= 1.0 for gamma in decays):
            msg = (
                f"linear_attention: every decay must lie in (0, 1] (1: no decay), got {self.decay!r}; "
                "e.g. decay=0.99 or decay='retnet'."
            )
            raise ValueError(msg)
        return self


LINEAR_ATTENTION_SPEC = ComponentSpec(
    name="linear_attention",
    group="amago.traj_encoders",
    summary=(
        "Linear attention (Katharopoulos et al. 2020), optional RetNet decay; "
        "parallel training, constant-cost rollout steps"
    ),
    config=LinearAttentionConfig,
    factory="amago_memories.linear_attention.encoder:LinearAttentionTrajEncoder",
)
