"""`amago plugin new`: one-line errors for bad requests, and generated plugins that install and pass their own tests.

The slow test installs one generated plugin per group into a throw-away venv that sees the workspace's
site-packages through a ``.pth`` file (so the shared ``.venv`` is never touched and nothing is downloaded
besides the build backend, hatchling, which uv takes from its cache when it has it), runs each plugin's own
test with that interpreter, and lists it with `amago list`.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from importlib.metadata import packages_distributions, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_tools.plugin_new import GROUP_TEMPLATES, PLACEHOLDER, PluginRequest, render

REPO = Path(__file__).resolve().parents[2]
GENERATED = {
    "traj-encoders": "my_lstm",
    "tstep-encoders": "my_linear",
    "agents": "my_agent",
    "explorations": "my_explore",
    "envs": "my_memory",
    "relabelers": "my_relabel",
}
"""Group -> the name the slow test generates (none of them is installed in the workspace)."""

runner = CliRunner()


def _new(*args: str):
    return runner.invoke(app, ["plugin", "new", *args])


# ---- bad requests: one line naming the problem and what to do ------------------------------------------------


def test_an_unknown_group_lists_the_groups(tmp_path):
    result = _new("traj-encoder-ish", "my_x", "--dir", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr == (
        "amago: error: unknown component group 'traj-encoder-ish'. Did you mean 'traj-encoders'? "
        "Groups: traj-encoders, tstep-encoders, agents, explorations, envs, relabelers.\n"
    )
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "name", ["MyLSTM", "9lives", "my lstm", "my.lstm", "_hidden", "my__lstm", "lstm-", ""]
)
def test_a_name_that_is_not_a_component_name_is_refused(tmp_path, name):
    result = _new("traj-encoders", name, "--dir", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr == (
        f"amago: error: {name!r} is not a component name: use lowercase letters and digits, words joined by "
        "one '_' (or '-'), starting with a letter, e.g. my_lstm.\n"
    )
    assert not any(tmp_path.iterdir())


def test_a_name_an_installed_component_has_is_refused_naming_its_distribution(tmp_path):
    rnn = _new("traj-encoders", "rnn", "--dir", str(tmp_path))
    assert rnn.exit_code == 2
    assert rnn.stderr == (
        f"amago: error: traj-encoders already has 'rnn' (from amago-nets {version('amago-nets')}); pick another "
        "name, e.g. my_rnn, so that both can be installed.\n"
    )
    assert (
        "already has 'gru' (from amago-nets " in _new("traj-encoders", "gru", "--dir", str(tmp_path)).stderr
    )
    assert "already has 'tmaze' (from amago-envs " in _new("envs", "tmaze", "--dir", str(tmp_path)).stderr
    assert "already has 'agent' (from amago-agents " in _new("agents", "agent", "--dir", str(tmp_path)).stderr
    assert not any(tmp_path.iterdir())


def test_regenerating_an_installed_plugin_over_itself_needs_force(tmp_path):
    # amago-plugin-lstm (the bundled example) registers `lstm`: exactly what `plugin new ... lstm` would write.
    refused = _new("traj-encoders", "lstm", "--dir", str(tmp_path))
    assert refused.exit_code == 2
    assert refused.stderr == (
        f"amago: error: traj-encoders already has 'lstm' from amago-plugin-lstm {version('amago-plugin-lstm')}, "
        "the distribution this would write; pass --force to regenerate it, or pick another name.\n"
    )
    forced = _new("traj-encoders", "lstm", "--dir", str(tmp_path), "--force")
    assert forced.exit_code == 0, forced.output
    assert (tmp_path / "amago-plugin-lstm" / "src" / "amago_plugin_lstm" / "encoder.py").is_file()


def test_an_existing_folder_needs_force_which_rewrites_only_the_generated_files(tmp_path):
    first = _new("agents", "my-agent", "--dir", str(tmp_path))
    assert first.exit_code == 0, first.output
    folder = tmp_path / "amago-plugin-my-agent"
    (folder / "NOTES.md").write_text("mine", encoding="utf-8")
    (folder / "pyproject.toml").write_text("edited", encoding="utf-8")

    again = _new("agents", "my_agent", "--dir", str(tmp_path))
    assert again.exit_code == 2
    assert again.stderr == (
        f"amago: error: {folder} already exists; pass --force to overwrite the files this command writes, "
        "or another --dir.\n"
    )
    assert (folder / "pyproject.toml").read_text(encoding="utf-8") == "edited"

    forced = _new("agents", "my_agent", "--dir", str(tmp_path), "--force")
    assert forced.exit_code == 0, forced.output
    assert (folder / "pyproject.toml").read_text(encoding="utf-8").startswith("[project]")
    assert (folder / "NOTES.md").read_text(encoding="utf-8") == "mine"


def test_a_file_where_the_folder_would_go_is_refused(tmp_path):
    (tmp_path / "amago-plugin-my-x").write_text("", encoding="utf-8")
    result = _new("envs", "my_x", "--dir", str(tmp_path), "--force")
    assert result.exit_code == 2
    assert result.stderr == (
        f"amago: error: {tmp_path / 'amago-plugin-my-x'} exists and is not a folder; remove it or pass another "
        "--dir.\n"
    )


def test_a_dir_that_cannot_hold_folders_is_one_line(tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("", encoding="utf-8")
    result = _new("envs", "my_x", "--dir", str(not_a_folder))
    assert result.exit_code == 2
    assert result.stderr.startswith("amago: error: could not write the plugin: ")
    assert result.stderr.endswith("; pass a --dir you can write to.\n")
    assert len(result.stderr.splitlines()) == 1


def test_the_success_message_says_what_to_run_next(tmp_path):
    result = _new("tstep_encoder", "my-linear", "--dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    folder = tmp_path / "amago-plugin-my-linear"
    assert result.stdout.splitlines()[0] == (
        f"wrote {folder}/: README.md, pyproject.toml, src/amago_plugin_my_linear/__init__.py, "
        "src/amago_plugin_my_linear/encoder.py, src/amago_plugin_my_linear/specs.py, tests/test_my_linear.py"
    )
    # The install lines depend on the environment (tests/docs_commands/test_plugin_next_steps.py); all of them
    # end by listing the component.
    assert result.stdout.splitlines()[1] == "next:"
    assert "amago list tstep-encoders" in result.stdout.splitlines()[-1]


# ---- what is generated --------------------------------------------------------------------------------------


def test_every_group_of_amago_list_has_a_template():
    assert set(GROUP_TEMPLATES) == set(GENERATED)


@pytest.mark.parametrize("group", sorted(GENERATED))
def test_a_generated_plugin_is_a_complete_distribution(group):
    request = PluginRequest.parse(group, "my_thing")
    files = request.files()
    package = Path("src/amago_plugin_my_thing")
    assert {
        Path("pyproject.toml"),
        Path("README.md"),
        package / "__init__.py",
        package / "specs.py",
        Path("tests/test_my_thing.py"),
    } < set(files)
    for path, text in files.items():
        assert PLACEHOLDER.search(text) is None, path
        if path.suffix == ".py":
            ast.parse(text, filename=str(path))
    pyproject = tomllib.loads(files[Path("pyproject.toml")])
    assert pyproject["build-system"] == {"requires": ["hatchling>=1.25"], "build-backend": "hatchling.build"}
    assert pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [str(package)]
    assert pyproject["project"]["name"] == "amago-plugin-my-thing"
    entry_points = pyproject["project"]["entry-points"]
    assert entry_points == {
        request.group.entry_point_group: {"my_thing": "amago_plugin_my_thing.specs:MY_THING"}
    }
    major, minor = version("amago-core").split(".")[:2]
    amago_requirements = [r for r in pyproject["project"]["dependencies"] if r.startswith("amago-")]
    assert amago_requirements
    assert all(r.endswith(f">={major}.{minor},<{major}.{int(minor) + 1}") for r in amago_requirements)
    assert "pytest>=8" in pyproject["project"]["optional-dependencies"]["test"]
    readme = files[Path("README.md")]
    assert 'pip install -e ".[test]"' in readme
    assert f"amago list {group}" in readme


def test_a_template_that_names_an_unknown_key_fails_loudly():
    with pytest.raises(KeyError, match="names \\{\\{nmae\\}\\}, which has no value"):
        render("kind = {{nmae}}", {"name": "x"}, "common/pyproject.toml")


# ---- the recipes in the README and the plugin guide --------------------------------------------------------

FENCE = re.compile(r"^```[\w-]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
PATH_MARKER = re.compile(r"^# ([\w./-]+\.(?:py|toml))\n")


def _marked_blocks(markdown: str) -> dict[str, str]:
    """Fenced blocks that start (after an optional ``# doctest: run``) with ``# <file path>``: path -> body."""
    blocks = {}
    for match in FENCE.finditer(markdown):
        body = match.group(1).removeprefix("# doctest: run\n")
        marker = PATH_MARKER.match(body)
        if marker:
            blocks[marker.group(1)] = body[marker.end() :]
    return blocks


def test_the_plugin_guide_shows_exactly_what_plugin_new_writes():
    guide = (REPO / "docs" / "tutorial" / "08-write-a-plugin.md").read_text(encoding="utf-8")
    generated = {
        str(path): text for path, text in PluginRequest.parse("traj-encoders", "my_lstm").files().items()
    }
    # Other blocks name files of other examples (my_bandit/suite.py...); the plugin's own are compared.
    shown = {path: body for path, body in _marked_blocks(guide).items() if path in generated}
    assert set(shown) == {
        "pyproject.toml",
        "src/amago_plugin_my_lstm/specs.py",
        "src/amago_plugin_my_lstm/encoder.py",
        "tests/test_my_lstm.py",
    }
    for path, body in shown.items():
        assert body == generated[path], (
            f"{path}: the guide differs from `amago plugin new traj-encoders my_lstm`"
        )


def test_the_readme_recipe_installs_and_passes_its_own_test(fake_distribution):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Adding a plugin") :]
    section = section[: section.index("\n## ", 5)]
    blocks = _marked_blocks(section)
    pyproject = tomllib.loads(blocks["pyproject.toml"])
    generated = tomllib.loads(PluginRequest.parse("traj-encoders", "my_lstm").files()[Path("pyproject.toml")])
    for table in ("build-system", "project"):
        for key, value in pyproject[table].items():
            assert value == generated[table][key], f"README pyproject [{table}] {key}"
    assert pyproject["tool"]["hatch"] == generated["tool"]["hatch"]

    fake_distribution(
        pyproject["project"]["name"],
        version=pyproject["project"]["version"],
        entry_points=pyproject["project"]["entry-points"],
        modules={path.removeprefix("src/"): body for path, body in blocks.items() if path.startswith("src/")}
        | {"amago_plugin_my_lstm/__init__.py": ""},
    )
    namespace: dict[str, object] = {}
    exec(compile(blocks["tests/test_my_lstm.py"], "README:tests/test_my_lstm.py", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests
    for test in tests:
        test()


# ---- the slow end-to-end check ------------------------------------------------------------------------------


def _run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=env, check=False)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


def _imported_distributions(files: list[Path], own_package: str) -> set[str]:
    """The distributions that the top-level imports of ``files`` come from (stdlib and the plugin left out)."""
    by_module = packages_distributions()
    found = set()
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for top in (m.split(".")[0] for m in modules):
                if top in sys.stdlib_module_names or top in ("__future__", own_package):
                    continue
                # The workspace's own packages are editable installs, which packages_distributions misses.
                found.add(top.replace("_", "-") if top.startswith("amago_") else by_module[top][0].lower())
    return found


def _usage_lines(readme: Path) -> list[str]:
    """The ``amago ...`` lines of a generated README's "Use" section."""
    text = readme.read_text(encoding="utf-8")
    block = text[text.index("## Use") :].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if line.startswith("amago ")]
    assert lines, readme
    return lines


def _check_requirements_match_imports(folder: Path, package: str) -> None:
    project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [Requirement(r) for r in project["dependencies"]]
    test_requirements = [Requirement(r) for r in project["optional-dependencies"]["test"]]
    for requirement in [*requirements, *test_requirements]:
        assert requirement.specifier.contains(version(requirement.name), prereleases=True), requirement
    main = {r.name for r in requirements}
    assert main == _imported_distributions(sorted((folder / "src").rglob("*.py")), package)
    test_imports = _imported_distributions(sorted((folder / "tests").rglob("*.py")), package)
    assert {r.name for r in test_requirements} == (test_imports - main) | {"pytest"}


@pytest.mark.slow
def test_generated_plugins_install_pass_their_own_tests_and_are_listed(tmp_path):
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH; this test installs the generated plugins with uv")
    plugins = tmp_path / "plugins"
    for group, name in GENERATED.items():
        result = _new(group, name, "--dir", str(plugins))
        assert result.exit_code == 0, result.output

    # A venv of its own that sees the workspace's packages (and their .pth files) without changing them.
    venv = tmp_path / "venv"
    _run(uv, "venv", "--quiet", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    site = Path(_run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (site / "_amago_workspace.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n", encoding="utf-8"
    )
    folders = sorted(plugins.iterdir())
    # Built as wheels (not editable), so the check covers what the pyproject ships.
    _run(uv, "pip", "install", "--quiet", "--python", str(python), "--no-deps", *map(str, folders))

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "VIRTUAL_ENV"} and not k.startswith("AMAGO_")
    }
    env["OMP_NUM_THREADS"] = "1"
    ruff = [sys.executable, "-m", "ruff"]
    for group, name in GENERATED.items():
        folder = plugins / ("amago-plugin-" + name.replace("_", "-"))
        package = "amago_plugin_" + name
        installed = _run(str(python), "-c", f"import {package}; print({package}.__file__)", env=env)
        assert installed.strip().startswith(str(site)), installed
        tests = _run(str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=folder, env=env)
        assert re.search(r"\d+ passed", tests), tests  # pytest exits non-zero on a failure or no tests
        listing = _run(str(python), "-m", "amago_core.cli.app", "list", group, "--json", env=env)
        row = next(r for r in json.loads(listing) if r["name"] == name)
        assert row["status"] == "ok"
        assert row["distribution"] == [f"amago-plugin-{name.replace('_', '-')} 0.1.0"]
        _run(*ruff, "check", "--quiet", ".", cwd=folder)
        _run(*ruff, "format", "--check", "--quiet", ".", cwd=folder)
        _check_requirements_match_imports(folder, package)
        for line in _usage_lines(folder / "README.md"):
            args = shlex.split(line)[1:]
            _run(
                str(python),
                "-m",
                "amago_core.cli.app",
                *args,
                *(["--dry-run"] if args[0] == "run" else []),
                env=env,
            )

    # All six together, for one tiny epoch of collection, learning and evaluation.
    runs = tmp_path / "runs"
    options = {
        "run.ckpt_base_dir": runs,
        "replay.relabeler": "my_relabel",
        "rollout.parallel_actors": 2,
        "tstep_encoder.d_output": 16,
        "traj_encoder.d_hidden": 16,
        "traj_encoder.d_output": 16,
        "schedule.epochs": 1,
        "schedule.train_timesteps_per_epoch": 7,
        "schedule.train_batches_per_epoch": 2,
        "schedule.val_timesteps_per_epoch": 7,
        "optim.batch_size": 4,
        "logging.plot": "false",
    }
    components = ["--traj-encoder", "my_lstm", "--tstep-encoder", "my_linear", "--agent", "my_agent"]
    components += ["--exploration", "my_explore", "--env", "my-memory-short", "--name", "all", "--quiet"]
    overrides = [arg for key, value in options.items() for arg in ("-o", f"{key}={value}")]
    _run(str(python), "-m", "amago_core.cli.app", "run", *components, *overrides, env=env)
    provenance = json.loads((runs / "all" / "config.resolved.json").read_text(encoding="utf-8"))[
        "_provenance"
    ]
    assert provenance["components"] == {
        "tstep_encoder": "amago-plugin-my-linear==0.1.0",
        "traj_encoder": "amago-plugin-my-lstm==0.1.0",
        "agent": "amago-plugin-my-agent==0.1.0",
        "exploration": "amago-plugin-my-explore==0.1.0",
        "relabeler": "amago-plugin-my-relabel==0.1.0",
    }
    assert list((runs / "all" / "buffer" / "fifo").glob("MyMemory-L4_*.npz"))


@pytest.mark.slow
def test_the_amago_tools_wheel_ships_the_templates(tmp_path):
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH; this test builds amago-tools' wheel with uv")
    _run(
        uv, "build", "--quiet", "--wheel", "--out-dir", str(tmp_path), str(REPO / "packages" / "amago-tools")
    )
    (wheel,) = tmp_path.glob("amago_tools-*.whl")
    source = REPO / "packages" / "amago-tools" / "src"
    templates = {
        p.relative_to(source).as_posix() for p in (source / "amago_tools/plugin_templates").rglob("*.tmpl")
    }
    assert len(templates) >= 3 + 3 * len(GENERATED)
    with zipfile.ZipFile(wheel) as archive:
        assert templates <= set(archive.namelist())
