"""``StrictModel``, the base of every amago config model, at this import path; it lives in the plugin API
(:mod:`amago_core.plugins.strict`), which plugin configs and specs are built on."""

from amago_core.plugins.strict import StrictModel, unknown_key_error

__all__ = ["StrictModel", "unknown_key_error"]
