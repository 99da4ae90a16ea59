"""AMAGO's ``amago.envs.builtin.xland_minigrid``: XLand-MiniGrid is amago-envs' ``xland`` suite;
``XLandMinigridVectorizedGym`` takes AMAGO's arguments (the benchmark file must be on disk)."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {"XLandMinigridVectorizedGym": "amago.from_amago.envs.xland:XLandMinigridVectorizedGym"},
)
