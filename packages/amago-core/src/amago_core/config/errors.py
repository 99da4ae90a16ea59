"""Pydantic validation errors as lines a person can act on, at this import path; :func:`describe_validation_error`
lives in the plugin API (:mod:`amago_core.plugins.strict`), which reports invalid specs the same way."""

from amago_core.plugins.strict import describe_validation_error

__all__ = ["describe_validation_error"]
