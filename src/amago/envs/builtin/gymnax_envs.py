"""AMAGO's ``amago.envs.builtin.gymnax_envs``: ``GymnaxCompatibility(env, num_envs, params)`` is amago-envs'
batched gymnax env (the ``gymnax`` suite) built from the gymnax env object, as AMAGO's wrapper was."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {
        "GymnaxCompatibility": "amago.from_amago.envs.gymnax:GymnaxCompatibility",
        # AMAGO's tutorial spells the class GymnaxCompatability; its code, GymnaxCompatibility.
        "GymnaxCompatability": "amago.from_amago.envs.gymnax:GymnaxCompatibility",
    },
)
