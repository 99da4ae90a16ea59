"""Plugin API compatibility (issue 25, item 5): a plugin written against an earlier API keeps loading.

- ``ComponentSpec(extra=...)`` of plugin API 1 as first published is mapped onto the typed fields, with exactly
  one ``DeprecationWarning`` that names them and the release that removes the old form;
- one invalid spec marks only its own entries broken, never the other specs of its module;
- `amago list` flags a factory module that does not exist; `amago doctor` builds every component and flags a
  factory that raises.

The frozen copy of a plugin written against API 1 is in tests/plugin_api_frozen/ (its own tests run there);
here it is loaded once more to check what the registry reports about it.
"""

from __future__ import annotations

import json
import warnings
from typing import Any, Literal

import pytest
from typer.testing import CliRunner

from amago_core.cli import doctor
from amago_core.cli.app import app
from amago_core.config import ComponentConfig, EnvSuiteConfig
from amago_core.plugins import ComponentSpec, InvalidSpecError, Status, registries
from amago_core.plugins.spec import EXTRA_REMOVED_IN, LEGACY_EXTRA_KEYS, BrokenSpec, defer_spec_errors
from amago_tools import doctor_build
from tests.plugin_api_frozen.conftest import frozen_plugin_files

from .conftest import IMPL_SOURCE

runner = CliRunner()


class GridConfig(EnvSuiteConfig):
    kind: Literal["grid"] = "grid"
    """Registered name."""


class WideConfig(ComponentConfig):
    kind: Literal["wide"] = "wide"
    """Registered name."""


def _suite(**fields: Any) -> ComponentSpec:
    fields = {"factory": "m:f", **fields}
    return ComponentSpec(name="grid", group="amago.env_suites", summary="s", config=GridConfig, **fields)


def _deprecations(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]


# --- extra=... of plugin API 1 ----------------------------------------------------------------------------------


def test_the_old_extra_keys_map_onto_the_typed_fields_with_one_deprecation_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = _suite(
            extra={
                "tasks": ["easy", "hard"],
                "default_task": "easy",
                "presets": {"*": {"run": {"max_seq_len": 8}}, "hard": {"run": {"max_seq_len": 16}}},
            }
        )
    assert spec.tasks == ("easy", "hard")
    assert spec.default_task == "easy"
    assert spec.preset_for("hard") == {"run": {"max_seq_len": 16}}
    (message,) = _deprecations(caught)
    assert "tasks=, default_task=, presets=" in message
    assert f"removed in {EXTRA_REMOVED_IN}" in message
    assert "\n" not in message
    # It points at the line that built the spec (the plugin's), not at amago or pydantic.
    (warning,) = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert warning.filename == __file__


def test_every_old_key_is_accepted() -> None:
    with pytest.warns(DeprecationWarning, match="cuda_kernels=, example_obs="):
        encoder = ComponentSpec(
            name="wide",
            group="amago.tstep_encoders",
            summary="s",
            config=WideConfig,
            factory="m:f",
            extra={
                "cuda_kernels": {"flash_attn": "pip install flash-attn"},
                "example_obs": {"image": {"shape": [8, 8, 3], "dtype": "uint8"}},
            },
        )
    assert encoder.cuda_kernels == {"flash_attn": "pip install flash-attn"}
    assert encoder.example_obs["image"].shape == (8, 8, 3)
    assert set(LEGACY_EXTRA_KEYS) == {"tasks", "default_task", "presets", "cuda_kernels", "example_obs"}


def test_the_old_none_and_empty_values_mean_the_defaults() -> None:
    with pytest.warns(DeprecationWarning, match=r"extra=\.\.\.\) is deprecated"):
        spec = _suite(extra={"tasks": [], "default_task": None, "presets": None})
    assert (spec.tasks, spec.default_task, dict(spec.presets)) == ((), None, {})


def test_unknown_keys_are_named_in_the_same_line_and_stay_readable() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = _suite(extra={"tasks": ["a"], "homepage": "https://x", "paper": "y"})
    (message,) = _deprecations(caught)
    assert "('homepage', 'paper')" in message
    with pytest.warns(DeprecationWarning, match=r"ComponentSpec\.extra is deprecated"):
        assert spec.extra["homepage"] == "https://x"


def test_the_same_key_twice_and_a_non_mapping_extra_are_one_line_each() -> None:
    with pytest.raises(InvalidSpecError, match=r"tasks is given both as tasks= and in extra=; keep tasks="):
        _suite(tasks=("a",), extra={"tasks": ["a"]})
    with pytest.raises(InvalidSpecError, match=r"extra= must be a mapping, got list"):
        _suite(extra=["tasks"])


def test_a_mapped_spec_is_still_checked() -> None:
    with (
        pytest.warns(DeprecationWarning, match="is deprecated"),
        pytest.raises(InvalidSpecError, match=r"default_task 'medium' is not one of tasks"),
    ):
        _suite(extra={"tasks": ["easy"], "default_task": "medium"})


# --- one invalid spec breaks only itself ------------------------------------------------------------------------

EIGHT_SPECS = """
from typing import Literal
from amago_core.config import ComponentConfig
from amago_core.plugins import ComponentSpec

SPECS = {}
for index in range(8):
    name = f"part{index}"
    config = type(
        f"Part{index}Config",
        (ComponentConfig,),
        {"__annotations__": {"kind": Literal[name]}, "kind": name, "__doc__": "A part."},
    )
    fields = dict(name=name, group="amago.traj_encoders", summary=f"part {index}", config=config,
                  factory="eight_pkg.impl:build")
    if index == 3:
        fields["taks"] = ("oops",)  # misspelt field
    if index == 5:
        fields["factory"] = "no colon here"  # contradicts itself
    SPECS[name] = ComponentSpec(**fields)

PART0, PART1, PART2, PART3, PART4, PART5, PART6, PART7 = SPECS.values()
"""


@pytest.fixture
def eight_specs(fake_distribution):
    fake_distribution(
        "amago-plugin-eight",
        entry_points={"amago.traj_encoders": {f"part{i}": f"eight_pkg.specs:PART{i}" for i in range(8)}},
        modules={
            "eight_pkg/__init__.py": "",
            "eight_pkg/specs.py": EIGHT_SPECS,
            "eight_pkg/impl.py": IMPL_SOURCE,
        },
    )


def test_one_invalid_spec_marks_only_itself_broken(eight_specs) -> None:
    infos = {i.name: i for i in registries().traj_encoders.describe() if i.name.startswith("part")}
    assert {name: str(info.status) for name, info in infos.items()} == {
        **{f"part{i}": "ok" for i in (0, 1, 2, 4, 6, 7)},
        "part3": "broken",
        "part5": "broken",
    }
    assert "unknown field 'taks'; did you mean 'tasks'?" in infos["part3"].detail
    assert "AMAGO_BLOCK_PLUGINS=amago-plugin-eight" in infos["part3"].detail
    assert "must look like 'package.module:Callable'" in infos["part5"].detail
    assert "\n" not in infos["part3"].detail
    built = registries().traj_encoders.build("part4", tstep_dim=2, max_seq_len=3)
    assert built.config.kind == "part4"


def test_list_shows_the_rest_ok_and_the_invalid_spec_broken(eight_specs) -> None:
    result = runner.invoke(app, ["list", "traj-encoders", "--json"])
    assert result.exit_code == 0, result.output
    statuses = {i["name"]: i["status"] for i in json.loads(result.stdout) if i["name"].startswith("part")}
    assert sorted(n for n, s in statuses.items() if s == "broken") == ["part3", "part5"]
    assert len([s for s in statuses.values() if s == "ok"]) == 6


def test_outside_the_registry_an_invalid_spec_still_raises_at_once() -> None:
    with pytest.raises(InvalidSpecError, match="must look like"):
        _suite(factory="nope")
    with defer_spec_errors():
        placeholder = _suite(factory="nope")
    assert isinstance(placeholder, BrokenSpec)
    with pytest.raises(InvalidSpecError, match="must look like"):
        placeholder.build()


# --- the frozen plugin of API 1 --------------------------------------------------------------------------------


def test_the_frozen_api_1_plugin_loads_with_one_warning_per_old_style_spec(fake_distribution) -> None:
    name, version, entry_points, modules = frozen_plugin_files("api_v1_extra_style")
    fake_distribution(name, version=version, entry_points=entry_points, modules=modules)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for registry in registries():
            registry.describe()
    messages = _deprecations(caught)
    assert sorted(m.split("'")[1] for m in messages) == ["bandit", "coin", "dial", "fast_lstm", "pixels"]
    for group, entries in entry_points.items():
        registry = next(r for r in registries() if r.group.entry_point_group == group)
        for name in entries:
            info = next(i for i in registry.describe() if name == i.name or name in i.aliases)
            assert info.status is Status.OK, info.detail


# --- list and doctor: factories that do not exist or raise -----------------------------------------------------

RAISING_IMPL = """
def build(config, **context):
    raise RuntimeError("the plugin's constructor is broken")
"""


@pytest.fixture
def factory_faults(fake_distribution):
    from .conftest import plugin_modules

    raising = plugin_modules("raising_pkg", "raising")
    raising["raising_pkg/impl.py"] = RAISING_IMPL
    fake_distribution(
        "amago-plugin-raising",
        entry_points={"amago.traj_encoders": {"raising": "raising_pkg.specs:SPEC"}},
        modules=raising,
    )
    typo = plugin_modules("typo_pkg", "typo")
    typo["typo_pkg/specs.py"] = typo["typo_pkg/specs.py"].replace("typo_pkg.impl:build", "typo_pkg.imp:build")
    fake_distribution(
        "amago-plugin-typo",
        entry_points={"amago.traj_encoders": {"typo": "typo_pkg.specs:SPEC"}},
        modules=typo,
    )


def test_list_flags_a_factory_module_that_does_not_exist_without_importing_factories(factory_faults) -> None:
    infos = {i.name: i for i in registries().traj_encoders.describe()}
    assert infos["typo"].status is Status.BROKEN
    assert "factory module 'typo_pkg.imp' does not exist" in infos["typo"].detail
    # A factory that raises when called is beyond what listing checks (it imports no factory).
    assert infos["raising"].status is Status.OK
    result = runner.invoke(app, ["list", "traj-encoders"], env={"COLUMNS": "200"})
    assert "amago doctor` builds each component" in result.stdout


@pytest.mark.slow
def test_doctor_builds_each_component_and_flags_one_that_raises(factory_faults, monkeypatch) -> None:
    monkeypatch.setattr(doctor, "find_torch_importers", lambda modules: {})
    monkeypatch.setattr(
        doctor, "probe_accelerators", lambda kernels=(): {"torch": "x", "cuda": False, "kernels": {}}
    )
    failures, unchecked, _ = doctor_build.find_failing_builds(
        ["traj-encoders:raising", "traj-encoders:identity"]
    )
    assert unchecked == []
    assert set(failures) == {"traj-encoders:raising"}
    assert failures["traj-encoders:raising"].stage == "build"
    assert "RuntimeError: the plugin's constructor is broken" in failures["traj-encoders:raising"].why

    monkeypatch.setattr(
        doctor_build,
        "find_failing_builds",
        lambda labels: (
            {"traj-encoders:raising": doctor_build.BuildFailure("build", "RuntimeError: broken")},
            [],
            "",
        ),
    )
    report = doctor.examine()
    (line,) = [e for e in report.errors if e.startswith("traj-encoders:raising:")]
    assert "raises when built with its default config on a tiny example input (RuntimeError: broken)" in line
    assert "amago-plugin-raising" in line
    assert any(e.startswith("traj-encoders:typo:") and "does not exist" in e for e in report.errors)


def test_the_build_check_reports_what_it_could_not_reach(monkeypatch) -> None:
    failures, unchecked, why = doctor_build.find_failing_builds(["traj-encoders:identity"], timeout_s=0.01)
    assert failures == {}
    assert unchecked == ["traj-encoders:identity"]
    assert "ran out of its 0.01 s" in why
