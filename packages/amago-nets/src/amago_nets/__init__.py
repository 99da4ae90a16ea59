"""amago-nets: timestep and trajectory encoders (see the package README).

Importing this package stays torch-free (``amago list`` imports ``amago_nets.specs``); the base classes are
loaded on first use: ``from amago_nets import TrajEncoder``.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {"TstepEncoder": "amago_nets.base", "TrajEncoder": "amago_nets.base"}

__all__ = ["TrajEncoder", "TstepEncoder", "__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    msg = f"module 'amago_nets' has no attribute {name!r}"
    raise AttributeError(msg)
