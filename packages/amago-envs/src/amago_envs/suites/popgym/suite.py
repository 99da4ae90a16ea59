"""``POPGymSuite``: the ``popgym`` env suite (single tasks and ``popgym-multidomain``)."""

from __future__ import annotations

from typing import Any

import gymnasium

from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.popgym.envs import MultiDomainPOPGym, POPGymTask
from amago_envs.suites.popgym.specs import (
    MULTIDOMAIN_TASK,
    MULTIDOMAIN_TASKS,
    POPGYM_DEFAULT_TASK,
    POPGymConfig,
)
from amago_envs.suites.suite import BuiltinSuite, check_split


class POPGymSuite(BuiltinSuite):
    """``popgym-<game>-<difficulty>`` (default ``popgym-repeat-previous-easy``) and ``popgym-multidomain``."""

    config_type = POPGymConfig
    config: POPGymConfig

    @property
    def default_task(self) -> str:
        """RepeatPreviousEasy: the memory task amago's learning benchmark uses."""
        return POPGYM_DEFAULT_TASK

    @property
    def env_name(self) -> str:
        """``popgym-<task>``; multidomain envs name themselves per drawn task."""
        return f"popgym-{self.task}"

    def make_gym_env(self) -> gymnasium.Env[Any, Any]:
        """The task with AMAGO's wrappers, or the multi-domain mix."""
        if self.task == MULTIDOMAIN_TASK:
            return MultiDomainPOPGym(
                MULTIDOMAIN_TASKS,
                warmup_episodes=self.config.warmup_episodes,
                timer_scale=self.config.timer_scale,
            )
        return POPGymTask(
            self.required_task,
            truncated_is_done=self.config.truncated_is_done,
            timer_scale=self.config.timer_scale,
        )

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """Like every suite, except that multidomain envs are named per episode (``env_name=None``)."""
        if self.task != MULTIDOMAIN_TASK:
            return super().make_env(split)
        check_split(split)
        # No fixed name: AMAGOEnv reads the drawn task's name from the env at every call.
        return AMAGOEnv(self.make_gym_env(), env_name=None)
