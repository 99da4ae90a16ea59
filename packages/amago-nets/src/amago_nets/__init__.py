"""amago-nets: timestep and trajectory encoders (see the package README).

Importing this package stays torch-free (``amago list`` imports ``amago_nets.specs``); the base classes are
loaded on first use: ``from amago_nets import TrajEncoder``.
"""

from __future__ import annotations

from amago_core.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_exports(
    __name__, {"TstepEncoder": "amago_nets.base", "TrajEncoder": "amago_nets.base"}
)
