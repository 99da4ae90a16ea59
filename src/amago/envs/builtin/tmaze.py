"""AMAGO's ``amago.envs.builtin.tmaze``: T-Maze is amago-envs' ``TMaze`` (env ids ``tmaze-passive``,
``tmaze-active``); ``TMazeAltPassive`` and ``TMazeAltActive`` take AMAGO's arguments (``corridor_length``,
``goal_reward``, ``penalty``)."""

from __future__ import annotations

from amago._compat import shim_exports

_TMAZE = (
    "use the env id tmaze-passive (or tmaze-active), or amago_envs.suites.tmaze.TMaze(corridor_length=H, "
    "penalty=-1/H{active})"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "TMazeAltPassive": "amago.from_amago.envs.tmaze:TMazeAltPassive",
        "TMazeAltActive": "amago.from_amago.envs.tmaze:TMazeAltActive",
    },
    no_counterpart={
        "TMazeAlt": "AMAGO's base class of the two Alt T-Mazes; use TMazeAltPassive or TMazeAltActive, or "
        + _TMAZE.format(active=""),
    },
)
