"""AMAGO's POPGym classes with AMAGO's constructors, on amago-envs' ``popgym`` suite."""

from __future__ import annotations

import popgym

from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.popgym.envs import MultiDomainPOPGym as _MultiDomain
from amago_envs.suites.popgym.envs import POPGymTask
from amago_envs.suites.popgym.specs import MULTIDOMAIN_TASKS, POPGYM_CLASSES


def task_of(env_name: str) -> str:
    """amago's task name of a popgym env id (``popgym-AutoencodeEasy-v0`` -> ``autoencode-easy``).

    Raises:
        ValueError: no popgym env has that id.
    """
    by_id = {entry["id"]: cls.__name__ for cls, entry in popgym.envs.ALL.items()}
    class_name = by_id.get(env_name)
    task = next((t for t, name in POPGYM_CLASSES.items() if name == class_name), None)
    if task is None:
        known = ", ".join(sorted(by_id)[:3])
        msg = f"{env_name!r} is no popgym env id (e.g. {known}, ...); AMAGO's names are popgym-<Class>-v0"
        raise ValueError(msg)
    return task


class POPGym(POPGymTask):
    """AMAGO's ``POPGym(env_name, truncated_is_done)``: a popgym env with flat one-hot observations and a timer.

    Args:
        env_name: the popgym env id (``popgym-AutoencodeEasy-v0``).
        truncated_is_done: report truncation as termination too (old popgym's ``done``).
    """

    def __init__(self, env_name: str, truncated_is_done: bool = True) -> None:
        super().__init__(task_of(env_name), truncated_is_done=truncated_is_done)


class POPGymAMAGO(AMAGOEnv):
    """AMAGO's ``POPGymAMAGO(env_name, truncated_is_done)``: :class:`POPGym` as an ``AMAGOEnv`` named ``env_name``."""

    def __init__(self, env_name: str, truncated_is_done: bool = True) -> None:
        super().__init__(POPGym(env_name, truncated_is_done=truncated_is_done), env_name=env_name)


class MultiDomainPOPGym(_MultiDomain):
    """AMAGO's ``MultiDomainPOPGym(warmup_episodes)``: AMAGO-2's 27 POPGym tasks in one observation and action
    space, ``warmup_episodes`` unscored attempts before the scored one."""

    def __init__(self, warmup_episodes: int = 1) -> None:
        super().__init__(MULTIDOMAIN_TASKS, warmup_episodes=warmup_episodes)

    @property
    def current_env_name(self) -> str:
        """The current task by popgym's class name (AMAGO's attribute)."""
        return POPGYM_CLASSES[self.current_task]


class MultiDomainPOPGymAMAGO(AMAGOEnv):
    """AMAGO's ``MultiDomainPOPGymAMAGO(warmup_episodes)``: named ``MultiDomainPOPGym-{task}`` after the current
    task, so metrics are per task."""

    def __init__(self, warmup_episodes: int = 1) -> None:
        super().__init__(MultiDomainPOPGym(warmup_episodes), env_name="MultiDomainPOPGym")

    @property
    def env_name(self) -> str:
        """``MultiDomainPOPGym-{popgym class of the current task}``."""
        env = self.env
        if not isinstance(env, MultiDomainPOPGym):  # set in __init__; a subclass may wrap it
            return "MultiDomainPOPGym"
        return f"MultiDomainPOPGym-{env.current_env_name}"


__all__ = ["MultiDomainPOPGym", "MultiDomainPOPGymAMAGO", "POPGym", "POPGymAMAGO", "task_of"]
