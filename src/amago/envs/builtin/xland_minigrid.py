"""AMAGO's ``amago.envs.builtin.xland_minigrid``: XLand-MiniGrid is amago-envs' ``xland`` suite."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={
        "XLandMinigridVectorizedGym": "use the env id xland-<benchmark> (e.g. xland-small-1m; `amago show envs "
        "xland`), or amago_envs.suites.xland.vector_env.XLandVectorEnv"
    },
)
