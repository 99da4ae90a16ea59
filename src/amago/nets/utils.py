"""AMAGO's ``amago.nets.utils``: small network helpers (amago-nets' layers); ``symlog`` and
``add_activation_log(root_key, activation, log_dict)`` keep AMAGO's signatures (:mod:`amago.from_amago.nets`)."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "symlog": "amago.from_amago.nets:symlog",
        "symexp": "amago_agents.twohot:symexp",
        "InputNorm": "amago_nets.layers:InputNorm",
        "activation_switch": "amago_nets.layers:activation_module",
        "add_activation_log": "amago.from_amago.nets:add_activation_log",
    },
    standins={
        "SlowAdaptiveRational": "activations are an option, not classes: AMAGO's learnable rational activation is "
        "activation=adaptive on each encoder and head (-o traj_encoder.activation=adaptive, "
        "-o agent.actor.activation=adaptive, -o agent.critic.activation=adaptive)",
    },
)
