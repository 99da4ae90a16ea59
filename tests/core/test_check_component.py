"""The generic part of `check_component`, on fake plugins that pass and that fail each check."""

from __future__ import annotations

import pytest

from amago_core.testing import ComponentCheckError, check_component

from .conftest import plugin_modules


def _install(fake_distribution, name: str, modules: dict[str, str], group: str = "amago.agents"):
    fake_distribution(
        f"amago-plugin-{name}", entry_points={group: {name: f"{name}_pkg.specs:SPEC"}}, modules=modules
    )


def test_a_well_formed_component_passes_and_builds(fake_distribution):
    _install(fake_distribution, "good", plugin_modules("good_pkg", "good", group="amago.agents"))
    report = check_component("agents", "good", context={"obs_space": None})
    assert report.built.context == {"obs_space": None}
    assert "config JSON round trip" in report.passed
    assert "spec module is torch-free" in report.passed


def test_an_undocumented_field_fails(fake_distribution):
    modules = plugin_modules("quiet_pkg", "quiet", group="amago.agents")
    modules["quiet_pkg/specs.py"] = modules["quiet_pkg/specs.py"].replace('    """How wide it is."""\n', "")
    _install(fake_distribution, "quiet", modules)
    with pytest.raises(ComponentCheckError, match="missing for width"):
        check_component("agents", "quiet")


@pytest.mark.slow
def test_a_spec_module_importing_torch_fails(fake_distribution):
    modules = plugin_modules("torchy_pkg", "torchy", group="amago.agents")
    modules["torchy_pkg/specs.py"] = "import torch  # noqa\n" + modules["torchy_pkg/specs.py"]
    _install(fake_distribution, "torchy", modules)
    with pytest.raises(ComponentCheckError, match=r"torchy_pkg\.specs imports torch"):
        check_component("agents", "torchy")


def test_a_config_that_does_not_round_trip_fails(fake_distribution):
    modules = plugin_modules("lossy_pkg", "lossy", group="amago.agents")
    modules["lossy_pkg/specs.py"] = (
        modules["lossy_pkg/specs.py"]
        .replace(
            '    """How wide it is."""\n',
            '    """How wide it is."""\n    @field_serializer("width")\n    def _ser(self, v):\n        return v + 1\n',
        )
        .replace(
            "from typing import Literal", "from typing import Literal\nfrom pydantic import field_serializer"
        )
    )
    _install(fake_distribution, "lossy", modules)
    with pytest.raises(ComponentCheckError, match="JSON round trip"):
        check_component("agents", "lossy")


def test_a_factory_returning_none_fails(fake_distribution):
    modules = plugin_modules("void_pkg", "void", group="amago.agents")
    modules["void_pkg/impl.py"] = "def build(config, **context):\n    return None\n"
    _install(fake_distribution, "void", modules)
    with pytest.raises(ComponentCheckError, match="returned None"):
        check_component("agents", "void", context={})
