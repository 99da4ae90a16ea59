"""amago-agents: AMAGO's learning updates as plugins (``agent``, ``multitask``), their heads and policies.

The package imports without torch; the agent classes load on first use::

    from amago_agents import Agent, MultiTaskAgent
"""

from __future__ import annotations

from amago_core.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "Agent": "amago_agents.agent",
        "MultiTaskAgent": "amago_agents.multitask",
        "BaseAgent": "amago_agents.base",
        "NonFiniteLossError": "amago_agents.base",
    },
)
