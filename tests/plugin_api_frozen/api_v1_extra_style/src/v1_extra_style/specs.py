"""Configs and specs. Torch-free: ``amago list`` imports this file only. Written against plugin API 1."""

from __future__ import annotations

from typing import Literal

from amago_core.config import ComponentConfig, EnvSuiteConfig
from amago_core.plugins import ComponentSpec


class LSTMConfig(ComponentConfig):
    """Stacked LSTM over the timestep embeddings."""

    kind: Literal["my_lstm"] = "my_lstm"
    """Registered name of this trajectory encoder."""
    d_hidden: int = 32
    """Hidden (and cell) size of each LSTM layer."""
    n_layers: int = 1
    """Number of stacked LSTM layers."""


class FastLSTMConfig(ComponentConfig):
    """The same LSTM, registered with the CUDA kernel package it would use when present."""

    kind: Literal["fast_lstm"] = "fast_lstm"
    """Registered name of this trajectory encoder."""
    d_hidden: int = 32
    """Hidden (and cell) size of each LSTM layer."""
    n_layers: int = 1
    """Number of stacked LSTM layers."""


class PixelsConfig(ComponentConfig):
    """One Linear layer over a flattened uint8 image."""

    kind: Literal["pixels"] = "pixels"
    """Registered name of this timestep encoder."""
    d_output: int = 16
    """Size of the embedding."""


class BanditConfig(EnvSuiteConfig):
    """k-armed bandits, a new one per rollout."""

    kind: Literal["bandit"] = "bandit"
    """Registered name of this env suite."""
    arms: int = 5
    """Number of arms."""


class CoinConfig(EnvSuiteConfig):
    """Guess a biased coin's side."""

    kind: Literal["coin"] = "coin"
    """Registered name of this env suite."""
    bias: float = 0.8
    """Probability of heads."""


class DialConfig(EnvSuiteConfig):
    """Turn a dial to a hidden position."""

    kind: Literal["dial"] = "dial"
    """Registered name of this env suite."""
    positions: int = 4
    """Number of dial positions."""


MY_LSTM = ComponentSpec(
    name="my_lstm",
    group="amago.traj_encoders",
    summary="LSTM; constant-cost rollout steps.",
    config=LSTMConfig,
    factory="v1_extra_style.encoder:LSTMTrajEncoder",  # imported only when a run builds it
    aliases=("lstm2",),
    requires=(),  # import names probed with importlib.util.find_spec, never imported
    install_hint=None,  # e.g. 'pip install "my-plugin[cuda]"', shown when a requirement is missing
)

FAST_LSTM = ComponentSpec(
    name="fast_lstm",
    group="amago.traj_encoders",
    summary="LSTM that uses a fused CUDA kernel when installed.",
    config=FastLSTMConfig,
    factory="v1_extra_style.encoder:LSTMTrajEncoder",
    extra={"cuda_kernels": {"v1_fused_lstm_kernels": 'pip install "amago-plugin-v1-extra-style[cuda]"'}},
)

PIXELS = ComponentSpec(
    name="pixels",
    group="amago.tstep_encoders",
    summary="Linear over flattened pixels.",
    config=PixelsConfig,
    factory="v1_extra_style.encoder:PixelsTstepEncoder",
    extra={"example_obs": {"image": {"shape": [6, 6, 3], "dtype": "uint8"}}},
)

BANDIT = ComponentSpec(
    name="bandit",
    group="amago.env_suites",
    summary="Multi-armed bandit meta-RL.",
    config=BanditConfig,
    factory="v1_extra_style.suite:BanditSuite",
    extra={"tasks": ["easy", "hard"], "default_task": "easy"},  # env ids bandit-easy, bandit-hard
)

COIN = ComponentSpec(
    name="coin",
    group="amago.env_suites",
    summary="Biased coin guessing.",
    config=CoinConfig,
    factory="v1_extra_style.suite:CoinSuite",
    extra={"tasks": [], "default_task": None, "presets": {"*": {"run": {"max_seq_len": 12}}}},
)

DIAL = ComponentSpec(
    name="dial",
    group="amago.env_suites",
    summary="Dial turning.",
    config=DialConfig,
    factory="v1_extra_style.suite:DialSuite",
    extra={
        "tasks": ["small", "large"],
        "default_task": "small",
        "presets": {"*": {"run": {"max_seq_len": 16}}, "large": {"run": {"max_seq_len": 32}}},
        "paper": "https://example.org/dial",  # the plugin's own metadata, read by nothing in amago
    },
)
