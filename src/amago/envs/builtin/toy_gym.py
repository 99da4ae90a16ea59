"""AMAGO's ``amago.envs.builtin.toy_gym``: Meta-Frozen-Lake and Dark Key-To-Door (amago-envs' numpy suites,
same constructor arguments; env ids ``frozen-lake`` and ``key-door``)."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "MetaFrozenLake": "amago_envs.suites.frozen_lake:MetaFrozenLake",
        "RoomKeyDoor": "amago_envs.suites.key_door:RoomKeyDoor",
    },
)
