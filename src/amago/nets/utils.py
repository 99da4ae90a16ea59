"""AMAGO's ``amago.nets.utils``: small network helpers (amago-nets' layers)."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "symlog": "amago_nets.layers:symlog",
        "symexp": "amago_agents.twohot:symexp",
        "InputNorm": "amago_nets.layers:InputNorm",
        "activation_switch": "amago_nets.layers:activation_module",
    },
    no_counterpart={
        "SlowAdaptiveRational": "amago's activations are leaky_relu, relu, gelu, mish and silu "
        "(the activation option of each encoder and head)",
        "add_activation_log": "amago logs no per-layer activation statistics",
    },
)
