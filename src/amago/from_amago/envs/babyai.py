"""AMAGO's multi-task BabyAI with AMAGO's constructor, on amago-envs' ``babyai`` suite (minigrid)."""

from __future__ import annotations

import re

from amago_envs.suites.babyai.env import MultitaskBabyAI, babyai_gym_id
from amago_envs.suites.babyai.specs import BANNED_FRAGMENTS, MULTITASK_LEVELS

BANNED_BABYAI_TASKS: list[str] = list(BANNED_FRAGMENTS)
"""Name fragments of the levels AMAGO keeps out of the multi-task mix."""

ALL_BABYAI_TASKS: list[str] = [babyai_gym_id(level) for level in MULTITASK_LEVELS]
"""The gym ids (``BabyAI-GoToLocal-v0``) of every registered level without a banned fragment, as AMAGO's list."""


def level_of(task: str) -> str:
    """amago's level of AMAGO's task name: ``BabyAI-GoToLocal-v0`` (or ``GoToLocal-v0``) -> ``GoToLocal``."""
    return re.sub(r"-v\d+$", "", task.removeprefix("BabyAI-"))


class MultitaskMetaBabyAI(MultitaskBabyAI):
    """AMAGO's ``MultitaskMetaBabyAI(task_names, k_episodes, seed_range, observation_type)``: every reset draws a
    task and a layout seed; the agent gets ``k_episodes`` attempts at it (``Episode {n} Success`` is logged).

    Args:
        task_names: BabyAI gym ids (``BabyAI-GoToLocal-v0``; ``ALL_BABYAI_TASKS``), with or without ``BabyAI-``.
        k_episodes: attempts per (task, layout).
        seed_range: layout seeds, both ends included (AMAGO drew them with ``random.randint``).
        observation_type: ``partial-grid``, ``full-grid``, ``partial-image`` or ``full-image``.

    Raises:
        ValueError: an unknown task or observation type.
    """

    def __init__(
        self,
        task_names: list[str],
        k_episodes: int = 2,
        seed_range: tuple[int, int] = (0, 1_000_000),
        observation_type: str = "partial-grid",
    ) -> None:
        levels = tuple(dict.fromkeys(level_of(task) for task in task_names))
        low, high = seed_range
        super().__init__(levels, k_episodes=k_episodes, seed_range=(low, high + 1), obs_kind=observation_type)
        self.task_names = [self.gym_ids[level].removeprefix("BabyAI-") for level in levels]
        self.observation_type = observation_type

    @property
    def current_task(self) -> str:
        """The current task as AMAGO named it (``GoToLocal-v0``)."""
        return self.gym_ids[self.current_level].removeprefix("BabyAI-")


__all__ = ["ALL_BABYAI_TASKS", "BANNED_BABYAI_TASKS", "MultitaskMetaBabyAI", "level_of"]
