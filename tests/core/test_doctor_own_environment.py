"""`amago doctor` and a component that needs an environment of its own (``ComponentSpec.own_environment``).

procgen's suite is the one that does (procgen-mirror needs numpy<2); the doctor reads the spec field for every
component and names no suite itself.
"""

from __future__ import annotations

import sys
import types
from typing import Literal

import pytest
from pydantic import ValidationError

from amago_core.cli import doctor
from amago_core.config import ComponentConfig
from amago_core.plugins import ComponentSpec, OwnEnvironment
from amago_core.plugins.registry import registries
from amago_tools import doctor_build

procgen_specs = pytest.importorskip("amago_envs.suites.procgen.specs")


class LoneConfig(ComponentConfig):
    kind: Literal["lone"] = "lone"
    """Registered name."""


def lone_spec(**own: object) -> ComponentSpec:
    fields = {"needs": "libfoo<3", "how": "`make lone-env`", **own}
    return ComponentSpec(
        name="lone",
        group="amago.agents",
        summary="s",
        config=LoneConfig,
        factory="m:f",
        own_environment=OwnEnvironment.model_validate(fields),
    )


@pytest.fixture
def clash(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A module ``fake_clash`` whose ``here()`` returns ``answer.value``."""
    answer = types.SimpleNamespace(value=None)
    module = types.ModuleType("fake_clash")
    module.here = lambda: answer.value  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_clash", module)
    return answer


# --- any component -----------------------------------------------------------------------------------------


def test_a_component_ruled_out_here_gets_its_own_environment_instead_of_the_install_line(clash) -> None:
    clash.value = "libfoo 3.1"
    line = doctor.component_problem(
        "agents:lone",
        "needs foo; run: pip install foo",
        broken=False,
        spec=lone_spec(clash="fake_clash:here"),
    )
    assert line == (
        "agents:lone: lone needs libfoo<3 and this environment has libfoo 3.1, so it gets an environment of its "
        "own: `make lone-env`"
    )


def test_a_component_this_environment_can_hold_keeps_its_install_line(clash) -> None:
    spec = lone_spec(clash="fake_clash:here")
    detail = "needs foo; run: pip install foo"
    assert (
        doctor.component_problem("agents:lone", detail, broken=False, spec=spec) == f"agents:lone: {detail}"
    )
    assert (
        doctor.component_problem("agents:lone", detail, broken=False, spec=lone_spec())
        == f"agents:lone: {detail}"
    )


def test_a_broken_component_says_why_and_how_to_build_its_environment(clash) -> None:
    line = doctor.component_problem("agents:lone", "cannot be imported", broken=True, spec=lone_spec())
    assert (
        line
        == "agents:lone: cannot be imported; lone needs libfoo<3, so it gets an environment of its own: `make lone-env`"
    )


def test_a_clash_check_that_fails_is_named_on_the_line(monkeypatch) -> None:
    module = types.ModuleType("fake_clash")
    module.here = lambda: 1 / 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_clash", module)
    line = doctor.component_problem(
        "agents:lone", "needs foo", broken=False, spec=lone_spec(clash="fake_clash:here")
    )
    assert line == (
        "agents:lone: needs foo; its own_environment.clash 'fake_clash:here' failed (ZeroDivisionError: division "
        "by zero)"
    )


def test_the_clash_check_is_a_module_path() -> None:
    with pytest.raises(ValidationError, match=r"must look like 'package\.module:callable'"):
        OwnEnvironment(needs="x", how="y", clash="not a path")


def test_other_components_keep_their_own_line() -> None:
    assert doctor.component_problem("envs:ale", "needs ale_py", broken=False) == "envs:ale: needs ale_py"


# --- procgen ----------------------------------------------------------------------------------------------


def procgen_line(detail: str, *, broken: bool) -> str:
    return doctor.component_problem("envs:procgen", detail, broken=broken, spec=procgen_specs.PROCGEN)


def test_missing_procgen_under_numpy_2_gets_its_own_environment(monkeypatch) -> None:
    monkeypatch.setattr(procgen_specs, "installed_numpy_version", lambda: "2.4.6")
    line = procgen_line("needs procgen, which is not installed", broken=False)
    assert "\n" not in line
    assert line.startswith("envs:procgen: procgen needs numpy<2 and this environment has numpy 2.4.6")
    assert (
        "UV_PROJECT_ENVIRONMENT=.venv-procgen uv sync --locked --no-dev --group test --extra procgen" in line
    )
    assert 'pip install "amago-envs[procgen]"` in a fresh venv' in line


def test_missing_procgen_under_numpy_1_keeps_its_install_line(monkeypatch) -> None:
    monkeypatch.setattr(procgen_specs, "installed_numpy_version", lambda: "1.26.4")
    detail = 'needs procgen, which is not installed; run: pip install "amago-envs[procgen]"'
    assert procgen_line(detail, broken=False) == f"envs:procgen: {detail}"


def test_broken_procgen_says_why_and_how_to_build_its_environment(monkeypatch) -> None:
    monkeypatch.setattr(procgen_specs, "installed_numpy_version", lambda: "1.26.4")
    line = procgen_line("cannot be imported (ImportError)", broken=True)
    assert line.startswith("envs:procgen: cannot be imported (ImportError); procgen needs numpy<2, so")
    assert "--extra procgen" in line


def test_doctor_reports_the_procgen_line(monkeypatch) -> None:
    if "procgen" not in registries().env_suites.names():
        pytest.skip("amago-envs (procgen's suite) is not installed")
    statuses = {info.name: str(info.status) for info in registries().env_suites.describe()}
    if statuses.get("procgen") != "missing":
        pytest.skip("procgen is installed here (its own environment)")
    # The child-process probes are not what this test is about (and take seconds): answer them here.
    monkeypatch.setattr(doctor, "find_torch_importers", lambda modules: {})
    monkeypatch.setattr(doctor_build, "find_failing_builds", lambda labels: ({}, [], ""))
    monkeypatch.setattr(
        doctor, "probe_accelerators", lambda kernels=(): {"torch": "x", "cuda": False, "kernels": {}}
    )
    monkeypatch.setattr(procgen_specs, "installed_numpy_version", lambda: "2.0.0")
    report = doctor.examine()
    (line,) = [w for w in report.warnings if w.startswith("envs:procgen:")]
    assert "procgen needs numpy<2 and this environment has numpy 2.0.0" in line
