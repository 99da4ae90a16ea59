"""AMAGO's ``amago.envs.builtin.tmaze``: T-Maze is amago-envs' ``TMaze`` (env ids ``tmaze-passive``,
``tmaze-active``)."""

from __future__ import annotations

from amago._compat import shim_exports

_TMAZE = (
    "use the env id tmaze-passive (or tmaze-active), or amago_envs.suites.tmaze.TMaze(corridor_length=H, "
    "penalty=-1/H{active})"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={
        "TMazeAltPassive": _TMAZE.format(active=""),
        "TMazeAltActive": _TMAZE.format(active=", active=True"),
        "TMazeAlt": _TMAZE.format(active=""),
    },
)
