"""amago-agents: AMAGO's learning updates as plugins (``agent``, ``multitask``), their heads and policies.

The package imports without torch; the agent classes load on first use::

    from amago_agents import Agent, MultiTaskAgent
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Agent": "amago_agents.agent",
    "MultiTaskAgent": "amago_agents.multitask",
    "BaseAgent": "amago_agents.base",
    "NonFiniteLossError": "amago_agents.base",
}

__all__ = ["Agent", "BaseAgent", "MultiTaskAgent", "NonFiniteLossError", "__version__"]


def __getattr__(name: str) -> Any:
    """Imports the agent classes (and torch) only when they are asked for."""
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'amago_agents' has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module), name)
