"""Built wheels work outside the workspace: a fresh venv with amago-core and amago-nets, but no torch,
discovers the nets through their wheel metadata and lists them (listing must never need torch)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TORCH_FREE_DEPENDENCIES = ["pydantic>=2.7", "typer>=0.12", "rich>=13", "pluggy>=1.5", "pyyaml>=6"]


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


@pytest.mark.slow
def test_wheels_install_and_list_without_torch(tmp_path):
    uv = _uv()
    dist = tmp_path / "dist"
    for package in ("amago-core", "amago-nets"):
        _run(uv, "build", "--wheel", "--out-dir", str(dist), str(REPO / "packages" / package))
    venv = tmp_path / "venv"
    _run(uv, "venv", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    wheels = sorted(str(w) for w in dist.glob("*.whl"))
    assert len(wheels) == 2, wheels
    # --no-deps for the wheels: torch is deliberately absent, listing must not need it.
    _run(uv, "pip", "install", "--python", str(python), "--no-deps", *wheels)
    _run(uv, "pip", "install", "--python", str(python), *TORCH_FREE_DEPENDENCIES)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    listing = _run(str(venv / "bin" / "amago"), "list", "traj-encoders", "--json", env=env)
    rows = {row["name"]: row for row in json.loads(listing.stdout)}
    assert {"transformer", "rnn", "mamba", "ff", "identity"} <= set(rows)
    assert rows["rnn"]["aliases"] == ["gru"]
    assert all(row["distribution"] == ["amago-nets 0.1.0"] for row in rows.values())
    shown = _run(str(venv / "bin" / "amago"), "show", "traj-encoders", "gru", "--json", env=env)
    assert json.loads(shown.stdout)["name"] == "rnn"
    no_torch = _run(
        str(python), "-c", "import importlib.util; print(importlib.util.find_spec('torch') is None)", env=env
    )
    assert no_torch.stdout.strip() == "True"
