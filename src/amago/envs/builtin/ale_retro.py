"""AMAGO's ``amago.envs.builtin.ale_retro``: Atari is amago-envs' ``ale`` suite (stable-retro has no
counterpart)."""

from __future__ import annotations

from amago._compat import shim_exports

_ATARI = "use the env id ale-<Game> (e.g. ale-Pong) or ale-multigame, or amago_envs.suites.ale.env.make_atari_game(game)"
_RETRO = (
    "amago has no stable-retro suite; write an env suite plugin for it (docs/tutorial/08-write-a-plugin.md)"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={
        "AtariGame": _ATARI,
        "ALE": "use the env id ale-multigame, or amago_envs.suites.ale.env.MultiGameAtari(games)",
        "AtariAMAGOWrapper": _ATARI,
        "RetroArcade": _RETRO,
        "RetroAMAGOWrapper": _RETRO,
    },
)
