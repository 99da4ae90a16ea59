"""AMAGO's ``amago.envs.builtin.mazerunner``: MazeRunner is amago-envs' ``mazerunner`` suite (env id
``mazerunner``; its hindsight relabeler is ``amago_envs.suites.mazerunner_relabel.MazeRunnerHindsightRelabeler``)."""

from __future__ import annotations

from amago._compat import shim_exports

_MAZE = (
    "use the env id mazerunner, or amago_envs.suites.mazerunner.MazeRunner(maze_dim, num_goals, time_limit)"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={
        "MazeRunnerGymEnv": _MAZE,
        "MazeRunnerAMAGOEnv": _MAZE,
        "RelabelInfoWrapper": "amago_envs.suites.mazerunner.MazeRunnerRelabelInfo(env) adds the relabeling "
        "observations",
    },
)
