"""AMAGO's ``amago.nets.goal_embedders``: amago has no goal embedders of its own."""

from __future__ import annotations

from amago._compat import shim_exports

_CUSTOM = (
    "amago has no goal embedders; embed the goal inside a custom TstepEncoder "
    "(docs/tutorial/02-components.md), or let the ff tstep encoder flatten the goal key"
)

__getattr__, __dir__, __all__ = shim_exports(
    __name__, {}, no_counterpart={"FFGoalEmb": _CUSTOM, "TokenGoalEmb": _CUSTOM}
)
