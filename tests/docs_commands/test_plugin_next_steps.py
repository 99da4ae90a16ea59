"""`amago plugin new` prints install lines that fit the environment amago runs in.

In a uv project (a clone of amago) the plugin is added to the project with `uv add`, so `uv sync` keeps it; in a
venv without pip (what uv makes) `uv pip install`, never a bare `pip` (another Python's); with pip, the
environment's own ``python -m pip``. The uv-project line is also run, with ``--frozen`` (no lock, no install,
no network), against a copy of the workspace's project files, to show uv takes it and records a workspace member.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from amago_tools.plugin_new import InstallEnvironment, PluginRequest, next_steps

REPO = Path(__file__).resolve().parents[2]
REQUEST = PluginRequest.parse("traj-encoders", "my_lstm")


def _env(
    tmp_path: Path, *, has_pip: bool, uv: str | None, project: bool, venv: bool = True
) -> InstallEnvironment:
    prefix = tmp_path / ".venv"
    return InstallEnvironment(
        python=prefix / "bin" / "python",
        prefix=prefix,
        is_venv=venv,
        has_pip=has_pip,
        uv=uv,
        uv_project=tmp_path if project else None,
    )


def _commands(lines: list[str]) -> list[str]:
    return [line.split("   # ")[0].strip() for line in lines]


def test_in_a_uv_project_the_plugin_is_added_to_the_project(tmp_path):
    folder = tmp_path / "amago-plugin-my-lstm"
    steps = next_steps(folder, REQUEST, _env(tmp_path, has_pip=False, uv="uv", project=True), cwd=tmp_path)
    assert _commands(steps) == [
        "uv add --dev --editable ./amago-plugin-my-lstm --extra test",
        "uv run pytest ./amago-plugin-my-lstm",
        "uv run amago list traj-encoders",
    ]
    assert "`uv sync` keeps it" in steps[0]


def test_from_elsewhere_the_lines_start_at_the_project_root(tmp_path):
    folder = tmp_path / "elsewhere" / "amago-plugin-my-lstm"
    root = tmp_path / "clone"
    root.mkdir()
    env = _env(root, has_pip=True, uv="uv", project=True)
    commands = _commands(next_steps(folder, REQUEST, env, cwd=tmp_path))
    assert commands[0] == f"cd {root}"
    assert commands[1] == f"uv add --dev --editable {folder} --extra test"


def test_a_venv_without_pip_uses_uv_pip_not_a_bare_pip(tmp_path):
    env = _env(tmp_path, has_pip=False, uv="uv", project=False)
    commands = _commands(next_steps(tmp_path / "amago-plugin-my-lstm", REQUEST, env, cwd=tmp_path))
    assert commands == [
        f"source {tmp_path / '.venv' / 'bin' / 'activate'}",
        'uv pip install -e "./amago-plugin-my-lstm[test]"',
        "pytest ./amago-plugin-my-lstm",
        "amago list traj-encoders",
    ]


def test_with_pip_the_environments_own_python_runs_it(tmp_path):
    env = _env(tmp_path, has_pip=True, uv=None, project=False)
    commands = _commands(next_steps(tmp_path / "amago-plugin-my-lstm", REQUEST, env, cwd=tmp_path))
    assert commands[1] == 'python -m pip install -e "./amago-plugin-my-lstm[test]"'
    outside_a_venv = _env(tmp_path, has_pip=True, uv=None, project=False, venv=False)
    commands = _commands(next_steps(tmp_path / "p", REQUEST, outside_a_venv, cwd=tmp_path))
    python = tmp_path / ".venv" / "bin" / "python"
    assert commands[:2] == [f'{python} -m pip install -e "./p[test]"', f"{python} -m pytest ./p"]


def test_neither_pip_nor_uv_says_to_bootstrap_pip(tmp_path):
    env = _env(tmp_path, has_pip=False, uv=None, project=False)
    commands = _commands(next_steps(tmp_path / "p", REQUEST, env, cwd=tmp_path))
    assert commands[1:3] == ["python -m ensurepip --upgrade", 'python -m pip install -e "./p[test]"']


def test_every_printed_line_is_one_shell_command(tmp_path):
    for has_pip in (True, False):
        for project in (True, False):
            env = _env(tmp_path, has_pip=has_pip, uv="uv", project=project)
            for command in _commands(next_steps(tmp_path / "a b" / "p", REQUEST, env, cwd=tmp_path)):
                words = shlex.split(command)
                assert words
                assert not any(w in {"&&", ";", "|"} for w in words), command


def test_this_checkout_gets_the_uv_project_lines():
    env = InstallEnvironment.detect()
    if env.uv is None or env.uv_project is None:
        pytest.skip("the tests do not run in a uv project's .venv with uv on PATH")
    assert env.uv_project == REPO
    commands = _commands(next_steps(REPO / "amago-plugin-my-lstm", REQUEST, env, cwd=REPO))
    assert commands[0] == "uv add --dev --editable ./amago-plugin-my-lstm --extra test"


def test_the_uv_add_line_makes_the_plugin_a_workspace_member(tmp_path):
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    # The workspace's project files only: enough for uv to edit pyproject.toml without building anything.
    for path in ["pyproject.toml", *map(str, REPO.glob("packages/*/pyproject.toml"))]:
        source = REPO / path
        target = tmp_path / source.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    for path in REPO.glob("plugins-examples/*/pyproject.toml"):
        target = tmp_path / path.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    folder, _ = REQUEST.write(tmp_path, force=True)
    env = InstallEnvironment(
        python=tmp_path / ".venv/bin/python",
        prefix=tmp_path / ".venv",
        is_venv=True,
        has_pip=False,
        uv="uv",
        uv_project=tmp_path,
    )
    command = _commands(next_steps(folder, REQUEST, env, cwd=tmp_path))[0]
    words = shlex.split(command)
    result = subprocess.run(
        [uv, *words[1:3], "--frozen", "--offline", *words[3:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    pyproject = tomllib.loads((tmp_path / "pyproject.toml").read_text(encoding="utf-8"))
    assert "amago-plugin-my-lstm" in pyproject["tool"]["uv"]["workspace"]["members"]
    assert pyproject["tool"]["uv"]["sources"]["amago-plugin-my-lstm"] == {"workspace": True, "editable": True}
    assert "amago-plugin-my-lstm[test]" in pyproject["dependency-groups"]["dev"]
