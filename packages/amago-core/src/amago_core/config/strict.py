"""``StrictModel``, the base of every amago config model, kept at this import path.

It lives in :mod:`amago_core.plugins.strict`: plugin configs and specs are built on it, and the plugin API sits
below the config package.
"""

from amago_core.plugins.strict import StrictModel, unknown_key_error

__all__ = ["StrictModel", "unknown_key_error"]
