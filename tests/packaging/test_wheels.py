"""Built wheels work outside the workspace.

- A fresh venv with amago-core and amago-nets, but no torch, discovers the nets through their wheel metadata
  and lists them (listing must never need torch).
- Every wheel's METADATA pins amago's own distributions to a compatible range, and amago-core keeps wandb and
  matplotlib in extras that the `amago` meta-package asks for.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
TORCH_FREE_DEPENDENCIES = ["pydantic>=2.7", "typer>=0.12", "rich>=13", "pluggy>=1.5", "pyyaml>=6"]
INTERNAL = (
    "amago",
    "amago-core",
    "amago-nets",
    "amago-agents",
    "amago-envs",
    "amago-tools",
    "amago-studies",
    "amago-ray",
    "amago-memories",
)
"""amago's own distributions: whoever depends on one names a range of compatible versions."""
PROJECTS = {
    "amago": REPO,
    **{p.name: p for p in sorted((REPO / "packages").iterdir()) if (p / "pyproject.toml").is_file()},
    **{p.name: p for p in sorted((REPO / "plugins-examples").iterdir()) if (p / "pyproject.toml").is_file()},
}
"""Every distribution of the workspace -> its folder."""
OPTIONAL_OUTSIDE_CORE = {"amago-wandb": "wandb", "amago-tools[plot]": "matplotlib"}
"""Feature distribution (and extra) -> the library that only it brings; amago-core names neither."""


def _uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.skip("uv is not on PATH; the packaging test builds wheels with uv")
    return found


def _run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=env, check=False)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def _version_of(project: str) -> Version:
    return Version(tomllib.loads((PROJECTS[project] / "pyproject.toml").read_text())["project"]["version"])


def _next_minor(version: Version) -> Version:
    return Version(f"{version.major}.{version.minor + 1}")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every workspace distribution built as a wheel (one ``uv build``): distribution name -> wheel."""
    uv = _uv()
    dist = tmp_path_factory.mktemp("dist")
    _run(uv, "build", "--wheel", "--all-packages", "--out-dir", str(dist), cwd=REPO)
    built = {}
    for wheel in dist.glob("*.whl"):
        name = wheel.name.split("-")[0].replace("_", "-")
        built[name] = wheel
    assert set(built) == set(PROJECTS), sorted(built)
    return built


def _metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        (path,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return Parser().parsestr(archive.read(path).decode("utf-8"))


def _requirements(wheel: Path) -> list[Requirement]:
    return [Requirement(line) for line in _metadata(wheel).get_all("Requires-Dist") or []]


@pytest.mark.slow
def test_wheels_install_and_list_without_torch(tmp_path, wheels):
    uv = _uv()
    venv = tmp_path / "venv"
    _run(uv, "venv", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    # --no-deps for the wheels: torch is deliberately absent, listing must not need it.
    _run(
        uv,
        "pip",
        "install",
        "--python",
        str(python),
        "--no-deps",
        str(wheels["amago-core"]),
        str(wheels["amago-nets"]),
    )
    _run(uv, "pip", "install", "--python", str(python), *TORCH_FREE_DEPENDENCIES)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    listing = _run(str(venv / "bin" / "amago"), "list", "traj-encoders", "--json", env=env)
    rows = {row["name"]: row for row in json.loads(listing.stdout)}
    assert {"transformer", "rnn", "mamba", "ff", "identity"} <= set(rows)
    assert rows["rnn"]["aliases"] == ["gru"]
    assert all(row["distribution"] == ["amago-nets 0.1.0"] for row in rows.values())
    shown = _run(str(venv / "bin" / "amago"), "show", "traj-encoders", "gru", "--json", env=env)
    assert json.loads(shown.stdout)["name"] == "rnn"
    versions = _run(str(venv / "bin" / "amago"), "--version", env=env).stdout.splitlines()
    assert "amago-core 0.1.0" in versions
    assert "amago-nets 0.1.0" in versions
    # Without the meta-package nothing names amago-agents or amago-envs: the installed amago-* stand in.
    assert versions == ["amago (not installed)", "amago-core 0.1.0", "amago-nets 0.1.0"]
    absent = _run(
        str(python),
        "-c",
        "import importlib.util; print([m for m in ('torch', 'wandb', 'matplotlib') if importlib.util.find_spec(m)])",
        env=env,
    )
    assert absent.stdout.strip() == "[]"
    # Without the extra, the feature that needs matplotlib says in one line what to install.
    missing = subprocess.run(
        [
            str(python),
            "-c",
            "from amago_core.optional import require; require('matplotlib', 'plot', 'plots', 'amago-tools')",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert missing.returncode == 1
    assert (
        missing.stderr.strip()
        .splitlines()[-1]
        .endswith("plots needs matplotlib: pip install 'amago-tools[plot]'")
    )


@pytest.mark.slow
def test_every_internal_dependency_carries_a_compatible_range(wheels):
    checked = 0
    for name, wheel in sorted(wheels.items()):
        for requirement in _requirements(wheel):
            if requirement.name not in INTERNAL:
                continue
            own = _version_of(requirement.name)
            assert own in requirement.specifier, f"{name}: {requirement} excludes the workspace's {own}"
            assert _next_minor(own) not in requirement.specifier, f"{name}: {requirement} has no upper bound"
            assert Version(f"{own.major}.{own.minor}") in requirement.specifier, f"{name}: {requirement}"
            checked += 1
    assert checked >= 20  # the meta-package's four and its forwarded extras, the packages, the plugins


@pytest.mark.slow
def test_wandb_and_matplotlib_come_with_their_features_which_the_meta_package_installs(wheels):
    core = _requirements(wheels["amago-core"])
    always = {r.name for r in core if r.marker is None}
    assert {"torch", "accelerate", "safetensors", "pydantic", "typer", "pluggy"} <= always
    assert not {r.name for r in core} & set(OPTIONAL_OUTSIDE_CORE.values())  # not even in an extra
    for feature, library in OPTIONAL_OUTSIDE_CORE.items():
        distribution, _, extra = feature.partition("[")
        (requirement,) = [r for r in _requirements(wheels[distribution]) if r.name == library]
        if extra:
            assert requirement.marker is not None
            assert requirement.marker.evaluate({"extra": extra.rstrip("]")})
            assert not requirement.marker.evaluate({"extra": ""})
        else:
            assert requirement.marker is None
    meta = {r.name: r for r in _requirements(wheels["amago"]) if r.marker is None}
    assert meta["amago-core"].extras == set()
    assert meta["amago-tools"].extras == {"plot"}
    assert "amago-wandb" in meta


KERNEL_AND_COMPONENTS = ("amago-core", "amago-nets", "amago-agents", "amago-envs")
"""What a user who wants none of amago's features installs: it must train."""


@pytest.mark.slow
def test_the_kernel_and_the_three_component_packages_train_without_any_feature(tmp_path, wheels):
    uv = _uv()
    # The versions the lock resolved (so the install comes from uv's cache, and matches what the suite tested).
    exported = _run(
        uv, "export", "--frozen", "--no-hashes", "--no-emit-workspace", "--all-packages", "--no-dev", cwd=REPO
    )
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(exported.stdout)
    venv = tmp_path / "venv"
    _run(uv, "venv", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    kernel = [str(wheels[name]) for name in KERNEL_AND_COMPONENTS]
    _run(uv, "pip", "install", "--python", str(python), "-c", str(constraints), *kernel)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.update(OMP_NUM_THREADS="1", AMAGO_NO_PREFLIGHT="1")
    features = "('amago_tools', 'amago_studies', 'amago_wandb', 'amago_ray', 'matplotlib', 'wandb', 'optuna')"
    absent = _run(
        str(python),
        "-c",
        f"import importlib.util as u; print([m for m in {features} if u.find_spec(m)])",
        env=env,
    )
    assert absent.stdout.strip() == "[]"
    amago = str(venv / "bin" / "amago")
    shown = _run(amago, "--help", env=env).stdout
    commands = {
        line.split()[1] for line in shown.splitlines() if line.startswith("│ ") and line[2:3].isalpha()
    }
    assert commands == {"list", "show", "plugins", "doctor", "run", "eval", "config", "d4rl-convert"}
    trained = _run(
        amago, "run", "--env", "tmaze-passive", "--smoke", "-o", "run.torch_threads=1", cwd=tmp_path, env=env
    )
    assert "the smoke run passed end to end" in trained.stderr
    assert json.loads(trained.stdout)["episodes_finished"]["test"] > 0
