"""AMAGO's ``amago.envs.builtin.mazerunner``: MazeRunner is amago-envs' ``mazerunner`` suite (env id
``mazerunner``; its hindsight relabeler is ``amago_envs.suites.mazerunner_relabel.MazeRunnerHindsightRelabeler``).
AMAGO's classes here take AMAGO's arguments."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "MazeRunnerGymEnv": "amago.from_amago.envs.mazerunner:MazeRunnerGymEnv",
        "MazeRunnerAMAGOEnv": "amago.from_amago.envs.mazerunner:MazeRunnerAMAGOEnv",
        "RelabelInfoWrapper": "amago.from_amago.envs.mazerunner:RelabelInfoWrapper",
    },
    no_counterpart={
        "random_maze": "amago_envs.suites.mazerunner.random_maze(size, rng) draws a maze (mazelab's algorithm)",
    },
)
