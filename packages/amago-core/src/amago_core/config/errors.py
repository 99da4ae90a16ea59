"""Pydantic validation errors as lines a person can act on, kept at this import path.

:func:`describe_validation_error` lives in :mod:`amago_core.plugins.strict`, with the model whose errors it
reads, so that the plugin API (below the config package) reports invalid specs the same way.
"""

from amago_core.plugins.strict import describe_validation_error

__all__ = ["describe_validation_error"]
