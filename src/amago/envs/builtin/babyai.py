"""AMAGO's ``amago.envs.builtin.babyai``: multi-task BabyAI is amago-envs' ``babyai`` suite;
``MultitaskMetaBabyAI`` takes AMAGO's arguments and ``ALL_BABYAI_TASKS`` is AMAGO's list of gym ids."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "MultitaskMetaBabyAI": "amago.from_amago.envs.babyai:MultitaskMetaBabyAI",
        "ALL_BABYAI_TASKS": "amago.from_amago.envs.babyai:ALL_BABYAI_TASKS",
        "BANNED_BABYAI_TASKS": "amago.from_amago.envs.babyai:BANNED_BABYAI_TASKS",
    },
)
