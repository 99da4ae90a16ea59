"""A cheap check of the numpy suites' discrete actions."""

from __future__ import annotations

import numpy as np


def is_discrete_action(action: object, n: int) -> bool:
    """Whether ``action`` is an integer (Python, numpy, or a 0-d integer array) in ``[0, n)``.

    What gymnasium's ``Discrete(n).contains`` accepts, at a fraction of its cost: it builds numpy dtype limits on
    every call (about 4.6 us here, half a Meta-Frozen-Lake step), and every env step checks its action.
    """
    if isinstance(action, np.ndarray):
        if action.shape != () or action.dtype.kind not in "iu":
            return False
        action = action.item()
    if not isinstance(action, int | np.integer):
        return False
    return 0 <= int(action) < n
