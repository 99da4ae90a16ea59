"""Testing helpers for amago and plugin authors: fake distributions, fresh registries, ``check_component``.

The fixtures (``fake_distribution``, ``fresh_registries``) are registered with pytest through the
``pytest11`` entry point of amago-core, so any test suite in an environment with amago-core has them.
"""

from amago_core.testing.check import CheckReport, ComponentCheckError, check_component
from amago_core.testing.distributions import FakeDistribution, activate_site, write_distribution

__all__ = [
    "CheckReport",
    "ComponentCheckError",
    "FakeDistribution",
    "activate_site",
    "check_component",
    "write_distribution",
]
