"""AMAGO's ``amago.envs.builtin.gymnax_envs``: gymnax envs are amago-envs' ``gymnax`` suite."""

from __future__ import annotations

from amago._compat import shim_exports

_GYMNAX = (
    "use the env id gymnax-<task> (e.g. gymnax-MemoryChain-bsuite; `amago show envs gymnax`), or "
    "amago_envs.suites.gymnax.vector_env.GymnaxVectorEnv(task, params, num_envs) wrapped in "
    "AMAGOEnv(..., batched_envs=num_envs) with env_mode='already_vectorized'"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    # AMAGO's tutorial spells the class GymnaxCompatability; its code, GymnaxCompatibility.
    no_counterpart={"GymnaxCompatibility": _GYMNAX, "GymnaxCompatability": _GYMNAX},
)
