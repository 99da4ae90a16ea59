"""``ComponentConfig`` and ``EnvSuiteConfig`` at their import path; they live in the plugin API (below config)."""

from amago_core.plugins.component_config import ComponentConfig, EnvSuiteConfig

__all__ = ["ComponentConfig", "EnvSuiteConfig"]
