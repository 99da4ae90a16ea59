"""``ComponentConfig`` and ``EnvSuiteConfig``, the bases of every plugin's own config, at their import path.

They live in :mod:`amago_core.plugins.component_config`: a spec names its config class, and the plugin API sits
below the config package.
"""

from amago_core.plugins.component_config import ComponentConfig, EnvSuiteConfig

__all__ = ["ComponentConfig", "EnvSuiteConfig"]
