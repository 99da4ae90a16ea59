"""Discovery of components from installed metadata: aliases, duplicates, broken plugins, switches."""

from __future__ import annotations

import sys

import pytest

from amago_core.plugins import (
    BrokenPluginError,
    DuplicateComponentError,
    MissingRequirementError,
    PluginSwitches,
    Registries,
    Status,
    UnknownComponentError,
    registries,
)

from .conftest import plugin_modules


def _info(name: str, group: str = "traj_encoder"):
    return next(i for i in registries()[group].describe() if i.name == name)


def test_fake_distribution_is_discovered_and_builds(demo_plugin):
    registry = registries().traj_encoders
    assert "demo" in registry.names()
    info = _info("demo")
    assert info.status is Status.OK
    assert info.distribution == ["amago-plugin-demo 0.3.0"]
    built = registry.build({"kind": "demo", "width": 3}, tstep_dim=5, max_seq_len=7)
    assert built.config.width == 3
    assert built.context == {"tstep_dim": 5, "max_seq_len": 7}


def test_alias_resolves_to_the_canonical_spec_and_is_folded_in_listings(demo_plugin):
    registry = registries().traj_encoders
    assert registry.resolve("dem") == "demo"
    assert registry.spec("dem") is registry.spec("demo")
    assert _info("demo").aliases == ["dem"]
    assert [i.name for i in registry.describe()].count("demo") == 1
    assert registry.make_config({"kind": "dem"}).kind == "demo"


def test_listing_imports_no_plugin_module(demo_plugin):
    registries().traj_encoders.names()
    assert "demo_pkg.specs" not in sys.modules
    registries().traj_encoders.describe()
    assert "demo_pkg.specs" in sys.modules
    assert "demo_pkg.impl" not in sys.modules  # only build() imports the implementation


def test_same_name_from_two_distributions_names_both(fake_distribution):
    for dist, package in (("amago-plugin-one", "one_pkg"), ("amago-plugin-two", "two_pkg")):
        fake_distribution(
            dist,
            version="2.0" if package == "two_pkg" else "1.0",
            entry_points={"amago.traj_encoders": {"twin": f"{package}.specs:SPEC"}},
            modules=plugin_modules(package, "twin"),
        )
    with pytest.raises(DuplicateComponentError) as excinfo:
        registries().traj_encoders.spec("twin")
    message = str(excinfo.value)
    assert "amago-plugin-one 1.0" in message
    assert "amago-plugin-two 2.0" in message
    assert "AMAGO_BLOCK_PLUGINS" in message
    assert _info("twin").status is Status.CONFLICT


def test_broken_plugin_is_listed_as_broken_while_the_rest_list_fine(demo_plugin, fake_distribution):
    fake_distribution(
        "amago-plugin-broken",
        entry_points={"amago.traj_encoders": {"wreck": "wreck_pkg.specs:SPEC"}},
        modules={"wreck_pkg/__init__.py": "", "wreck_pkg/specs.py": "import a_module_that_does_not_exist\n"},
    )
    infos = {i.name: i for i in registries().traj_encoders.describe()}
    assert infos["wreck"].status is Status.BROKEN
    assert "a_module_that_does_not_exist" in infos["wreck"].detail
    assert infos["demo"].status is Status.OK
    with pytest.raises(BrokenPluginError) as excinfo:
        registries().traj_encoders.build("wreck")
    assert isinstance(excinfo.value.__cause__, ModuleNotFoundError)


def test_missing_requirement_reports_the_install_hint(fake_distribution):
    fake_distribution(
        "amago-plugin-needy",
        entry_points={"amago.traj_encoders": {"needy": "needy_pkg.specs:SPEC"}},
        modules=plugin_modules(
            "needy_pkg", "needy", requires=("not_installed_kernel_lib",), hint='pip install "needy[gpu]"'
        ),
    )
    info = _info("needy")
    assert info.status is Status.MISSING
    assert 'pip install "needy[gpu]"' in info.detail
    with pytest.raises(
        MissingRequirementError, match=r'not_installed_kernel_lib.*pip install "needy\[gpu\]"'
    ):
        registries().traj_encoders.build("needy")


def test_entry_name_that_matches_neither_name_nor_alias_is_broken(fake_distribution):
    fake_distribution(
        "amago-plugin-mislabelled",
        entry_points={"amago.traj_encoders": {"label": "label_pkg.specs:SPEC"}},
        modules=plugin_modules("label_pkg", "other_name"),
    )
    info = _info("label")
    assert info.status is Status.BROKEN
    assert "neither the spec's name 'other_name'" in info.detail


def test_spec_registered_in_the_wrong_group_is_broken(fake_distribution):
    fake_distribution(
        "amago-plugin-wronggroup",
        entry_points={"amago.agents": {"lost": "lost_pkg.specs:SPEC"}},
        modules=plugin_modules("lost_pkg", "lost", group="amago.traj_encoders"),
    )
    info = _info("lost", "agent")
    assert info.status is Status.BROKEN
    assert "registered under 'amago.agents'" in info.detail


def test_config_kind_that_contradicts_the_spec_name_is_broken(fake_distribution):
    modules = plugin_modules("kind_pkg", "kindly")
    modules["kind_pkg/specs.py"] = modules["kind_pkg/specs.py"].replace(
        'kind: Literal["kindly"] = "kindly"', 'kind: Literal["unkind"] = "unkind"'
    )
    fake_distribution(
        "amago-plugin-kind",
        entry_points={"amago.traj_encoders": {"kindly": "kind_pkg.specs:SPEC"}},
        modules=modules,
    )
    info = _info("kindly")
    assert info.status is Status.BROKEN
    assert "pins kind='unkind'" in info.detail


def test_unknown_name_suggests_and_lists_installed(demo_plugin):
    with pytest.raises(UnknownComponentError) as excinfo:
        registries().traj_encoders.spec("dmeo")
    message = str(excinfo.value)
    assert "Did you mean 'demo'?" in message
    assert "Installed: " in message
    assert "demo" in message.split("Installed: ")[1]
    assert "`amago list traj-encoders`" in message


def test_unknown_name_without_a_close_match_has_no_guess(demo_plugin):
    with pytest.raises(UnknownComponentError) as excinfo:
        registries().traj_encoders.spec("zzzzzzzz")
    assert "Did you mean" not in str(excinfo.value)


def test_disable_autoload_keeps_builtins_and_drops_third_party(demo_plugin, monkeypatch):
    regs = Registries(PluginSwitches.from_environ({"AMAGO_DISABLE_PLUGIN_AUTOLOAD": "1"}))
    assert "demo" not in regs.traj_encoders.names()
    assert "transformer" in regs.traj_encoders.names()  # amago-nets is a built-in distribution
    with pytest.raises(UnknownComponentError, match="AMAGO_DISABLE_PLUGIN_AUTOLOAD is set"):
        regs.traj_encoders.spec("demo")


def test_allow_list_loads_only_the_named_third_party_distributions(demo_plugin, fake_distribution):
    fake_distribution(
        "amago-plugin-other",
        entry_points={"amago.traj_encoders": {"other": "other_pkg.specs:SPEC"}},
        modules=plugin_modules("other_pkg", "other"),
    )
    regs = Registries(PluginSwitches.from_environ({"AMAGO_PLUGINS": "amago_plugin_other"}))
    names = regs.traj_encoders.names()
    assert "other" in names
    assert "demo" not in names
    assert "transformer" in names
    with_autoload_off = Registries(
        PluginSwitches.from_environ(
            {"AMAGO_DISABLE_PLUGIN_AUTOLOAD": "1", "AMAGO_PLUGINS": "amago-plugin-demo"}
        )
    )
    assert "demo" in with_autoload_off.traj_encoders.names()
    assert "other" not in with_autoload_off.traj_encoders.names()


def test_block_list_removes_a_distribution_even_a_builtin(demo_plugin):
    regs = Registries(PluginSwitches.from_environ({"AMAGO_BLOCK_PLUGINS": "amago-plugin-demo, amago-nets"}))
    assert "demo" not in regs.traj_encoders.names()
    assert "transformer" not in regs.traj_encoders.names()
    assert {r.distribution for r in regs.traj_encoders.skipped()} >= {"amago-plugin-demo", "amago-nets"}


def test_block_list_resolves_a_duplicate(fake_distribution):
    for dist, package in (("amago-plugin-one", "one_pkg"), ("amago-plugin-two", "two_pkg")):
        fake_distribution(
            dist,
            entry_points={"amago.traj_encoders": {"twin": f"{package}.specs:SPEC"}},
            modules=plugin_modules(package, "twin"),
        )
    regs = Registries(PluginSwitches.from_environ({"AMAGO_BLOCK_PLUGINS": "amago-plugin-one"}))
    assert regs.traj_encoders.spec("twin").factory == "two_pkg.impl:build"


def test_switches_read_from_the_process_environment(demo_plugin, monkeypatch, fresh_registries):
    monkeypatch.setenv("AMAGO_BLOCK_PLUGINS", "amago-plugin-demo")
    from amago_core.plugins import reset_registries

    reset_registries()
    assert "demo" not in registries().traj_encoders.names()


def test_env_ids_resolve_to_the_longest_suite_prefix(fake_distribution):
    for suite in ("grid", "grid_world"):
        package = f"{suite}_pkg"
        modules = plugin_modules(package, suite, group="amago.env_suites")
        modules[f"{package}/specs.py"] = modules[f"{package}/specs.py"].replace(
            "from amago_core.config import ComponentConfig",
            "from amago_core.config import EnvSuiteConfig as ComponentConfig",
        )
        fake_distribution(
            f"amago-plugin-{suite}",
            entry_points={"amago.env_suites": {suite: f"{package}.specs:SPEC"}},
            modules=modules,
        )
    regs = registries()
    assert regs.resolve_env_id("grid-world-Hard-v2") == ("grid_world", "Hard-v2")
    assert regs.resolve_env_id("grid-Easy") == ("grid", "Easy")
    assert regs.resolve_env_id("grid") == ("grid", None)
    assert regs.resolve_env_id("grid_world") == ("grid_world", None)
    with pytest.raises(UnknownComponentError, match=r"no installed env suite matches.*`amago list envs`"):
        regs.resolve_env_id("gird-Easy")
