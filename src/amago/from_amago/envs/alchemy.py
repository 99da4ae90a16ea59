"""AMAGO's ``SymbolicAlchemy``: amago-envs' dm_env adapter around DeepMind's symbolic Alchemy level."""

from __future__ import annotations

from typing import Any

from amago_envs.suites.alchemy.specs import ALCHEMY_INSTALL_HINT, ALCHEMY_LEVEL

try:
    from dm_alchemy import symbolic_alchemy
except ImportError:  # one line naming the install, as amago list envs does
    msg = f"amago.envs.builtin.alchemy.SymbolicAlchemy needs dm_alchemy, which is not installed: {ALCHEMY_INSTALL_HINT}"
    raise ImportError(msg, name="dm_alchemy") from None

from amago_envs.suites.alchemy.dm_env_adapter import DmEnvToGymnasium


def _level(seed: int) -> Any:
    return symbolic_alchemy.get_symbolic_alchemy_level(f"alchemy/{ALCHEMY_LEVEL}", seed=seed)


class SymbolicAlchemy(DmEnvToGymnasium):
    """AMAGO's ``SymbolicAlchemy()``: the symbolic level ``perceptual_mapping_randomized_with_rotation_and_random_
    bottleneck``, rebuilt with a new seed (a new chemistry) at every reset; observations are ``symbolic_obs``."""

    def __init__(self) -> None:
        super().__init__(_level, env_name="dm_symbolic_alchemy")


__all__ = ["SymbolicAlchemy"]
