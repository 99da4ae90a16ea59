"""AMAGO's ``amago.envs.builtin.metaworld_ml``: Meta-World is amago-envs' ``metaworld`` suite;
``Metaworld(benchmark_name, split, k_episodes)`` takes AMAGO's arguments."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {"Metaworld": "amago.from_amago.envs.metaworld:Metaworld"},
    no_counterpart={
        "KEpisodeMetaworld": "it took an old-API metaworld benchmark object; use Metaworld(benchmark_name, split, "
        "k_episodes), or amago_envs.suites.metaworld.kshot.KShotMetaworld(benchmark, split, k_episodes)"
    },
)
