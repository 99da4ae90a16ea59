"""AMAGO's ``amago.envs.builtin.alchemy``: Symbolic Alchemy is amago-envs' ``alchemy`` suite."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={
        "SymbolicAlchemy": "use the env id alchemy (needs dm_alchemy: see `amago show envs alchemy`)"
    },
)
