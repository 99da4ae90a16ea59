"""Validated configuration: component configs, slots, the experiment config tree and its sources."""

from amago_core.config.component import ComponentConfig, EnvSuiteConfig
from amago_core.config.strict import StrictModel

__all__ = ["ComponentConfig", "EnvSuiteConfig", "StrictModel"]
