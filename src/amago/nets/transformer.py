"""AMAGO's ``amago.nets.transformer``: the Transformer's pieces, which amago chooses by options of the
``transformer`` trajectory encoder instead of by class (``-o traj_encoder.attention=flex``)."""

from __future__ import annotations

from amago._compat import shim_exports

_ATTENTION = "attention backends are an option of the transformer traj encoder, not classes: "

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {"SigmaReparam": "amago_nets.layers:SigmaReparamLinear"},
    no_counterpart={
        "Transformer": "the transformer traj encoder (TformerTrajEncoder in amago.nets.traj_encoders) holds the "
        "whole stack; its layers are amago_nets.traj_transformer.TransformerLayer",
        "TransformerLayer": "amago_nets.traj_transformer.TransformerLayer is built from a "
        "TransformerTrajEncoderConfig, not keyword arguments",
        "Cache": "the rollout KV cache is amago_nets.kv_cache.KVCache, made by the encoder's init_hidden_state()",
        "TformerHiddenState": "the rollout KV cache is amago_nets.kv_cache.KVCache, made by the encoder's "
        "init_hidden_state()",
    },
    standins={
        "SelfAttention": _ATTENTION + "-o traj_encoder.attention=sdpa|flash|flex|sliding_sink",
        "FlashAttention": _ATTENTION + "-o traj_encoder.attention=flash (a sliding window: "
        "-o traj_encoder.window_size=N)",
        "VanillaAttention": _ATTENTION + "-o traj_encoder.attention=sdpa",
        "FlexAttention": _ATTENTION + "-o traj_encoder.attention=flex",
        "VanillaFlexAttention": _ATTENTION + "-o traj_encoder.attention=flex",
        "SlidingWindowFlexAttention": _ATTENTION
        + "-o traj_encoder.attention=flex -o traj_encoder.window_size=N (AMAGO's window_size w is N = w + 1)",
        "ClippedSlidingSinkAttention": _ATTENTION
        + "-o traj_encoder.attention=sliding_sink -o traj_encoder.window_size=N -o traj_encoder.sink_size=S "
        "-o traj_encoder.logit_clip=C (AMAGO's window_size w is N = w + 1)",
        "LearnablePosEmb": "positions are an option of the transformer traj encoder: "
        "-o traj_encoder.pos_emb=learnable -o traj_encoder.max_time_idx=N",
    },
)
