"""AMAGO's MazeRunner classes with AMAGO's constructors, on amago-envs' ``MazeRunner``."""

from __future__ import annotations

from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.mazerunner import MazeRunner, MazeRunnerRelabelInfo


class MazeRunnerGymEnv(MazeRunner):
    """AMAGO's ``MazeRunnerGymEnv(maze_dim, min_num_goals, max_num_goals, time_limit, goal_in_obs,
    randomized_action_space)``: a random maze with a sequence of goals to reach in order.

    Args:
        maze_dim: maze size (odd).
        min_num_goals: fewest goals in an episode.
        max_num_goals: most goals in an episode.
        time_limit: steps per episode.
        goal_in_obs: append the goals to the vector observation.
        randomized_action_space: permute the action indices every episode.
    """

    def __init__(
        self,
        maze_dim: int,
        min_num_goals: int,
        max_num_goals: int,
        time_limit: int,
        goal_in_obs: bool = True,
        randomized_action_space: bool = False,
    ) -> None:
        super().__init__(
            maze_dim=maze_dim,
            num_goals=max_num_goals,
            time_limit=time_limit,
            min_num_goals=min_num_goals,
            goal_in_obs=goal_in_obs,
            randomized_action_space=randomized_action_space,
        )


class RelabelInfoWrapper(MazeRunnerRelabelInfo):
    """AMAGO's ``RelabelInfoWrapper(env)``: dict observations ``obs``, ``achieved`` and ``goals`` for relabeling."""


class MazeRunnerAMAGOEnv(AMAGOEnv):
    """AMAGO's ``MazeRunnerAMAGOEnv(maze_dim, num_goals, time_limit, randomized_action_space)``: MazeRunner set up
    for hindsight relabeling (goals in the ``goals`` key, not the vector), named ``MazeRunner-{n}x{n}-k{k}``.

    Args:
        maze_dim: maze size (odd).
        num_goals: goals per episode.
        time_limit: steps per episode.
        randomized_action_space: permute the action indices every episode ("rewired" actions).
    """

    def __init__(self, maze_dim: int, num_goals: int, time_limit: int, randomized_action_space: bool) -> None:
        env = MazeRunnerRelabelInfo(
            MazeRunner(
                maze_dim=maze_dim,
                num_goals=num_goals,
                time_limit=time_limit,
                goal_in_obs=False,
                randomized_action_space=randomized_action_space,
            )
        )
        super().__init__(env, env_name=f"MazeRunner-{maze_dim}x{maze_dim}-k{num_goals}", batched_envs=1)


__all__ = ["MazeRunnerAMAGOEnv", "MazeRunnerGymEnv", "RelabelInfoWrapper"]
