"""AMAGO's ``amago.envs.builtin``: its benchmark wrappers, which amago ships as env suites (amago-envs).

In amago a benchmark is usually named by its env id (``amago run --env metaworld-ml45``, or
``Experiment(env="metaworld-ml45")``; ``amago list envs`` lists them). Each of AMAGO's modules here keeps its
class names: those whose amago env takes the same arguments are re-exported, the others raise a one-line
ImportError naming the env id and the amago class to use.
"""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    submodules={
        name: f"{__name__}.{name}"
        for name in (
            "alchemy",
            "ale_retro",
            "babyai",
            "gymnax_envs",
            "half_cheetah_v4_vel",
            "mazerunner",
            "metaworld_ml",
            "popgym_envs",
            "procgen_envs",
            "tmaze",
            "toy_gym",
            "xland_minigrid",
        )
    },
)
