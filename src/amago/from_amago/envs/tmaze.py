"""AMAGO's ``TMazeAltPassive`` / ``TMazeAltActive``: amago-envs' ``TMaze`` with AMAGO's constructor."""

from __future__ import annotations

from amago_envs.suites.tmaze import TMaze


def _no_distraction(distract_reward: float) -> None:
    if distract_reward != 0.0:
        # AMAGO's "Alt" T-Mazes assert it too (their reward has no distractor term).
        msg = f"distract_reward must be 0.0 in the Alt T-Mazes (AMAGO asserts it too); got {distract_reward}"
        raise ValueError(msg)


class TMazeAltPassive(TMaze):
    """T-Maze whose first observation shows the goal side; episodes of ``corridor_length + 1`` steps.

    Args:
        corridor_length: cells between the start and the junction (the recall distance).
        goal_reward: reward on the last step when standing on the goal side.
        penalty: reward (<= 0) for every action other than "right" before the last step.
        distract_reward: must be 0.0 (as in AMAGO).
    """

    def __init__(
        self,
        corridor_length: int = 10,
        goal_reward: float = 1.0,
        penalty: float = 0.0,
        distract_reward: float = 0.0,
    ) -> None:
        _no_distraction(distract_reward)
        super().__init__(
            corridor_length=corridor_length, active=False, goal_reward=goal_reward, penalty=penalty
        )


class TMazeAltActive(TMaze):
    """T-Maze whose agent steps back to the oracle cell first; episodes of ``corridor_length + 3`` steps.

    Args:
        corridor_length: cells between the corridor's start and the junction.
        goal_reward: reward on the last step when standing on the goal side.
        penalty: reward (<= 0) for every action other than "right" after the oracle, before the last step.
        distract_reward: must be 0.0 (as in AMAGO).
    """

    def __init__(
        self,
        corridor_length: int = 10,
        goal_reward: float = 1.0,
        penalty: float = 0.0,
        distract_reward: float = 0.0,
    ) -> None:
        _no_distraction(distract_reward)
        super().__init__(
            corridor_length=corridor_length, active=True, goal_reward=goal_reward, penalty=penalty
        )


__all__ = ["TMazeAltActive", "TMazeAltPassive"]
