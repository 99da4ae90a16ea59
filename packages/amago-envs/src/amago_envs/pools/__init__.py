"""Moved to ``amago_core.rollout.pools``: amago-core owns the rollout contract. This name keeps old imports working."""

from amago_core.lazy import alias_module

alias_module(__name__, "amago_core.rollout.pools")
