"""Helpers for the core tests: sources of small fake plugins written into fake distributions."""

from __future__ import annotations

import pytest

SPEC_TEMPLATE = '''
from typing import Literal
from amago_core.config import ComponentConfig
from amago_core.plugins import ComponentSpec


class {cls}Config(ComponentConfig):
    kind: Literal["{name}"] = "{name}"
    """Registered name."""
    width: int = 8
    """How wide it is."""


SPEC = ComponentSpec(
    name="{name}",
    group="{group}",
    summary="{summary}",
    config={cls}Config,
    factory="{package}.impl:build",
    requires={requires!r},
    install_hint={hint!r},
    aliases={aliases!r},
)
'''

IMPL_SOURCE = """
class Built:
    def __init__(self, config, **context):
        self.config = config
        self.context = context


def build(config, **context):
    return Built(config, **context)
"""


def plugin_modules(
    package: str,
    name: str,
    *,
    group: str = "amago.traj_encoders",
    summary: str = "a demo component",
    requires: tuple[str, ...] = (),
    hint: str | None = None,
    aliases: tuple[str, ...] = (),
) -> dict[str, str]:
    """Module sources for a one-component plugin package: ``{package}/specs.py`` and ``{package}/impl.py``."""
    spec = SPEC_TEMPLATE.format(
        cls=name.title().replace("_", ""),
        name=name,
        group=group,
        summary=summary,
        package=package,
        requires=requires,
        hint=hint,
        aliases=aliases,
    )
    return {f"{package}/__init__.py": "", f"{package}/specs.py": spec, f"{package}/impl.py": IMPL_SOURCE}


@pytest.fixture
def demo_plugin(fake_distribution):
    """Installs a fake ``amago-plugin-demo`` with traj encoder ``demo`` (alias ``dem``) and returns the dist."""
    return fake_distribution(
        "amago-plugin-demo",
        version="0.3.0",
        entry_points={"amago.traj_encoders": {"demo": "demo_pkg.specs:SPEC", "dem": "demo_pkg.specs:SPEC"}},
        modules=plugin_modules("demo_pkg", "demo", aliases=("dem",)),
    )
