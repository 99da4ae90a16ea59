"""AMAGO's ``amago.envs.builtin.babyai``: multi-task BabyAI is amago-envs' ``babyai`` suite."""

from __future__ import annotations

from amago._compat import shim_exports

_LEVELS = "the levels are options of the babyai suite (`amago show envs babyai`)"

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={
        "MultitaskMetaBabyAI": "use the env id babyai-multitask (or babyai-<level>), or "
        "amago_envs.suites.babyai.env.MultitaskBabyAI(levels, k_episodes)",
        "ALL_BABYAI_TASKS": _LEVELS,
        "BANNED_BABYAI_TASKS": _LEVELS,
    },
)
