"""AMAGO's ``amago.envs.builtin.popgym_envs``: POPGym is amago-envs' ``popgym`` suite."""

from __future__ import annotations

from amago._compat import shim_exports

_TASK = (
    "use the env id popgym-<task> (e.g. popgym-repeat-previous-easy; `amago show envs popgym`), or "
    "amago_envs.suites.popgym.envs.POPGymTask(task)"
)
_MULTIDOMAIN = "use the env id popgym-multidomain, or amago_envs.suites.popgym.envs.MultiDomainPOPGym(tasks, warmup_episodes=1)"

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={
        "POPGym": _TASK,
        "POPGymAMAGO": _TASK,
        "MultiDomainPOPGym": _MULTIDOMAIN,
        "MultiDomainPOPGymAMAGO": _MULTIDOMAIN,
    },
)
