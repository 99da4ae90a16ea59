"""AMAGO's ``amago.envs.builtin.ale_retro``: Atari is amago-envs' ``ale`` suite; ``AtariGame``, ``ALE`` and
``AtariAMAGOWrapper`` take AMAGO's arguments (stable-retro has no counterpart)."""

from __future__ import annotations

from amago._compat import shim_exports

_RETRO = (
    "amago has no stable-retro suite; write an env suite plugin for it (docs/tutorial/08-write-a-plugin.md)"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "AtariGame": "amago.from_amago.envs.ale:AtariGame",
        "ALE": "amago.from_amago.envs.ale:ALE",
        "AtariAMAGOWrapper": "amago.from_amago.envs.ale:AtariAMAGOWrapper",
    },
    no_counterpart={"RetroArcade": _RETRO, "RetroAMAGOWrapper": _RETRO},
)
