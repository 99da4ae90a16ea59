"""AMAGO's ``amago.envs.builtin.popgym_envs``: POPGym is amago-envs' ``popgym`` suite; AMAGO's classes
here take AMAGO's arguments (``POPGymAMAGO("popgym-AutoencodeEasy-v0", truncated_is_done=True)``)."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "POPGym": "amago.from_amago.envs.popgym:POPGym",
        "POPGymAMAGO": "amago.from_amago.envs.popgym:POPGymAMAGO",
        "MultiDomainPOPGym": "amago.from_amago.envs.popgym:MultiDomainPOPGym",
        "MultiDomainPOPGymAMAGO": "amago.from_amago.envs.popgym:MultiDomainPOPGymAMAGO",
    },
)
