"""AMAGO's ``amago.envs.builtin.alchemy``: ``SymbolicAlchemy()`` on amago-envs' ``alchemy`` suite's dm_env adapter
(needs dm_alchemy, which has no PyPI release: importing the class without it says how to install it)."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__, {"SymbolicAlchemy": "amago.from_amago.envs.alchemy:SymbolicAlchemy"}
)
