"""The plugin's spec and config. Torch-free: ``amago list`` imports this file, never the encoder."""

from __future__ import annotations

from typing import Literal

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec


class LSTMConfig(ComponentConfig):
    """Stacked LSTM over the timestep embeddings."""

    kind: Literal["lstm"] = "lstm"
    """Registered name of this trajectory encoder."""
    d_hidden: int = 256
    """Hidden (and cell) size of each LSTM layer."""
    n_layers: int = 1
    """Number of stacked LSTM layers."""
    d_output: int = 256
    """Size of the output embedding."""
    layer_norm: bool = True
    """LayerNorm on the output."""


LSTM_SPEC = ComponentSpec(
    name="lstm",
    group="amago.traj_encoders",
    summary="LSTM; constant-cost rollout steps (example third-party plugin).",
    config=LSTMConfig,
    factory="amago_plugin_lstm.encoder:LSTMTrajEncoder",
)
