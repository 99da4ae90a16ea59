"""AMAGO's ``amago.envs.builtin.metaworld_ml``: Meta-World is amago-envs' ``metaworld`` suite."""

from __future__ import annotations

from amago._compat import shim_exports

_METAWORLD = (
    "use the env id metaworld-<benchmark> (e.g. metaworld-ml45, metaworld-ml1-reach-v3; `amago show envs "
    "metaworld`), or amago_envs.suites.metaworld.kshot.KShotMetaworld(benchmark, split, k_episodes)"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__, {}, no_counterpart={"Metaworld": _METAWORLD, "KEpisodeMetaworld": _METAWORLD}
)
