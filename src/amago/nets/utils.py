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
        "add_activation_log": "amago logs no per-layer activation statistics",
    },
    standins={
        "SlowAdaptiveRational": "activations are an option, not classes: AMAGO's learnable rational activation is "
        "activation=adaptive on each encoder and head (-o traj_encoder.activation=adaptive, "
        "-o agent.actor.activation=adaptive, -o agent.critic.activation=adaptive)",
    },
)
