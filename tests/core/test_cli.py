"""The `amago` CLI, through Typer's runner and through a real subprocess of the console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app

from .conftest import plugin_modules

runner = CliRunner()


def _amago_executable() -> str:
    found = shutil.which("amago", path=str(Path(sys.executable).parent)) or shutil.which("amago")
    if found is None:
        pytest.fail(
            "the `amago` console script is not installed next to this Python; run `uv sync --all-packages`"
        )
    return found


def run_console(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_amago_executable(), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_list_json_parses_and_includes_a_fake_plugin(demo_plugin):
    result = runner.invoke(app, ["list", "traj-encoders", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["demo"]["aliases"] == ["dem"]
    assert rows["demo"]["distribution"] == ["amago-plugin-demo 0.3.0"]
    assert rows["demo"]["status"] == "ok"


def test_list_all_kinds_json_has_every_kind():
    result = runner.invoke(app, ["list", "--json"])
    assert result.exit_code == 0
    assert set(json.loads(result.stdout)) == {
        "traj-encoders",
        "tstep-encoders",
        "agents",
        "explorations",
        "envs",
        "relabelers",
    }


def test_list_shows_broken_plugins_and_still_lists_the_rest(demo_plugin, fake_distribution):
    fake_distribution(
        "amago-plugin-broken",
        entry_points={"amago.traj_encoders": {"wreck": "wreck_pkg.specs:SPEC"}},
        modules={"wreck_pkg/__init__.py": "", "wreck_pkg/specs.py": "raise RuntimeError('boom at import')\n"},
    )
    result = runner.invoke(app, ["list", "traj-encoders", "--json"])
    assert result.exit_code == 0
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["wreck"]["status"] == "broken"
    assert "boom at import" in rows["wreck"]["detail"]
    assert rows["demo"]["status"] == "ok"


def test_show_json_has_fields_with_type_default_and_description(demo_plugin):
    result = runner.invoke(app, ["show", "traj-encoders", "dem", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["name"] == "demo"
    assert data["distribution"] == ["amago-plugin-demo 0.3.0"]
    width = next(f for f in data["fields"] if f["name"] == "width")
    assert width == {"name": "width", "type": "int", "default": "8", "description": "How wide it is."}


def test_show_human_output_has_the_field_table(demo_plugin):
    result = runner.invoke(app, ["show", "traj-encoders", "demo"])
    assert result.exit_code == 0
    assert "How wide it is." in result.stdout
    assert "amago-plugin-demo 0.3.0" in result.stdout


def test_unknown_kind_exits_2_with_one_line():
    result = runner.invoke(app, ["list", "traj-encoderz"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "Did you mean 'traj-encoders'?" in result.stderr


def test_plugins_json_groups_components_by_distribution(demo_plugin):
    result = runner.invoke(app, ["plugins", "--json"])
    assert result.exit_code == 0
    rows = {row["distribution"]: row for row in json.loads(result.stdout)["distributions"]}
    assert rows["amago-plugin-demo"]["version"] == "0.3.0"
    assert rows["amago-plugin-demo"]["components"] == ["traj-encoders:demo"]
    assert rows["amago-core"]["hooks"] == ["jsonl"]
    assert rows["amago-wandb"]["hooks"] == ["wandb"]  # the wandb backend is a plugin of its own (issue 40)
    assert rows["amago"]["hooks"] == ["default_job", "import_amago"]


def test_config_show_applies_overrides_and_files(tmp_path, demo_plugin):
    file = tmp_path / "run.toml"
    file.write_text('traj_encoder = "demo"\n[optim]\nbatch_size = 3\n')
    result = runner.invoke(
        app, ["config", "show", "-c", str(file), "-o", "optim.batch_size=9", "-o", "traj_encoder.width=2"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["optim"]["batch_size"] == 9
    assert data["traj_encoder"] == {"kind": "demo", "width": 2}


def test_config_show_bad_value_exits_2_naming_the_field():
    result = runner.invoke(app, ["config", "show", "-o", "optim.batch_size=many"])
    assert result.exit_code == 2
    assert "optim.batch_size" in result.stderr
    assert result.stderr.count("\n") == 1


def test_config_schema_is_json_with_sections(tmp_path):
    out = tmp_path / "schema.json"
    result = runner.invoke(app, ["config", "schema", "--output", str(out)])
    assert result.exit_code == 0
    schema = json.loads(out.read_text())
    assert {"run", "optim", "traj_encoder", "env"} <= set(schema["properties"])


def test_plugin_hooks_can_add_cli_commands(fake_distribution):
    fake_distribution(
        "amago-plugin-cmd",
        entry_points={"amago": {"cmd": "cmd_pkg.hooks"}},
        modules={
            "cmd_pkg/__init__.py": "",
            "cmd_pkg/hooks.py": """
                from amago_core.hooks import hookimpl

                def hello():
                    print("hello from a plugin")

                @hookimpl
                def amago_cli_commands(app):
                    app.command("hello")(hello)
            """,
        },
    )
    result = run_console("hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hello from a plugin"


# ---- the real console script ----------------------------------------------------------------------


def test_console_script_list_json_parses(demo_plugin):
    result = run_console("list", "traj-encoders", "--json")
    assert result.returncode == 0, result.stderr
    names = {row["name"] for row in json.loads(result.stdout)}
    assert {"demo", "transformer"} <= names


def test_console_script_unknown_name_exits_2_with_one_line():
    result = run_console("show", "traj-encoders", "grue")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("amago: error: unknown trajectory encoder 'grue'. Did you mean 'gru'?")
    assert "amago list traj-encoders" in lines[0]


@pytest.mark.slow
def test_console_script_doctor_fails_on_a_broken_plugin(fake_distribution):
    fake_distribution(
        "amago-plugin-broken",
        entry_points={"amago.tstep_encoders": {"wreck": "wreck_pkg.specs:SPEC"}},
        modules={"wreck_pkg/__init__.py": "", "wreck_pkg/specs.py": "import not_a_module_anywhere\n"},
    )
    result = run_console("doctor", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert not report["ok"]
    assert any("tstep-encoders:wreck" in e and "not_a_module_anywhere" in e for e in report["errors"])


@pytest.mark.slow
def test_console_script_doctor_catches_a_spec_module_that_imports_torch(fake_distribution):
    modules = plugin_modules("heavy_pkg", "heavy")
    modules["heavy_pkg/specs.py"] = "import torch\n" + modules["heavy_pkg/specs.py"]
    fake_distribution(
        "amago-plugin-heavy",
        entry_points={"amago.traj_encoders": {"heavy": "heavy_pkg.specs:SPEC"}},
        modules=modules,
    )
    result = run_console("doctor", "--json")
    assert result.returncode == 1
    errors = json.loads(result.stdout)["errors"]
    assert any("heavy_pkg.specs imports torch" in e for e in errors)


def test_human_listing_keeps_bracketed_install_hints(fake_distribution):
    fake_distribution(
        "amago-plugin-needy",
        entry_points={"amago.traj_encoders": {"needy": "needy_pkg.specs:SPEC"}},
        modules=plugin_modules(
            "needy_pkg", "needy", requires=("absent_kernel_lib",), hint='pip install "needy[gpu]"'
        ),
    )
    for args in (["list", "traj-encoders"], ["show", "traj-encoders", "needy"], ["plugins"]):
        result = runner.invoke(app, args, env={"COLUMNS": "400"})
        assert result.exit_code == 0, result.output
        if args[0] != "plugins":
            assert 'needy[gpu]"' in result.stdout, args
        else:
            assert "amago-plugin-needy" in result.stdout


def test_show_says_whether_cuda_kernels_are_usable_here(monkeypatch):
    import amago_core.plugins.kernels as kernels

    result = runner.invoke(app, ["show", "traj-encoders", "mamba", "--json"])
    assert result.exit_code == 0
    report = {k["module"]: k for k in json.loads(result.stdout)["cuda_kernels"]}
    assert set(report) == {"mamba_ssm", "causal_conv1d"}
    assert not report["mamba_ssm"]["installed"]
    assert 'pip install "amago-nets[mamba]"' in report["mamba_ssm"]["why"]

    monkeypatch.setattr(kernels.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(kernels, "nvidia_driver_present", lambda: False)
    text = runner.invoke(app, ["show", "traj-encoders", "transformer"], env={"COLUMNS": "300"}).stdout
    assert "flash_attn: installed, but no NVIDIA driver is loaded here" in text


def _guide_run_option_example() -> str:
    """The plugin guide's run-option example, as the page shows it (the block after "in full:")."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "tutorial" / "08-write-a-plugin.md").read_text()
    after = guide.split("A run option from a plugin, in full:", 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_a_plugin_adds_a_run_option_and_sees_the_plan(fake_distribution):
    # The plugin guide's example, read from the page: an option on `amago run` and a hook that reads it and the plan.
    fake_distribution(
        "amago-plugin-notify",
        entry_points={"amago": {"notify": "notify_pkg.amago_hooks"}},
        modules={"notify_pkg/__init__.py": "", "notify_pkg/amago_hooks.py": _guide_run_option_example()},
    )
    shown = run_console("run", "--help")
    assert "--notify" in shown.stdout, shown.stderr
    result = run_console("run", "--env", "tmaze-passive", "--name", "mine", "--notify", "me@lab", "--dry-run")
    assert result.returncode == 0, result.stderr
    first, rest = result.stdout.split("\n", 1)
    assert first == "would mail me@lab when mine ends"
    assert json.loads(rest)["run"]["name"] == "mine"  # then amago run printed the plan, as without the plugin


def test_a_plugin_run_option_that_is_taken_is_left_out_with_one_line(fake_distribution):
    fake_distribution(
        "amago-plugin-clash",
        entry_points={"amago": {"clash": "clash_pkg.amago_hooks"}},
        modules={
            "clash_pkg/__init__.py": "",
            "clash_pkg/amago_hooks.py": """
                from typing import Annotated

                import typer

                from amago_core.hooks import RunOption, hookimpl


                @hookimpl
                def amago_run_options():
                    return [RunOption("seed", Annotated[int | None, typer.Option("--my-seed")])]
            """,
        },
    )
    result = run_console("run", "--help")
    assert result.returncode == 0, result.stderr
    assert "--my-seed" not in result.stdout
    warning = [line for line in result.stderr.splitlines() if "clash" in line]
    assert warning == [
        "amago: warning: plugin amago-plugin-clash:clash adds a `run` option 'seed' that another already has; it "
        "was left out (rename it in that plugin)."
    ]


def test_a_plugin_takes_the_run_over_with_its_exit_code(fake_distribution, tmp_path):
    fake_distribution(
        "amago-plugin-takeover",
        entry_points={"amago": {"takeover": "takeover_pkg.amago_hooks"}},
        modules={
            "takeover_pkg/__init__.py": "",
            "takeover_pkg/amago_hooks.py": """
                from amago_core.hooks import hookimpl


                @hookimpl
                def amago_run_begin(request):
                    print("ran it my way:", request.argv[0])
                    return 3
            """,
        },
    )
    result = run_console("run", "--env", "tmaze-passive", "-o", f"run.ckpt_base_dir={tmp_path}")
    assert result.returncode == 3, result.stderr
    assert result.stdout.strip() == "ran it my way: run"
    assert list(tmp_path.iterdir()) == []  # nothing resolved, nothing written


def test_a_plugin_replaces_the_plan_before_the_run_and_later_hooks_see_both(fake_distribution):
    fake_distribution(
        "amago-plugin-replan",
        entry_points={"amago": {"replan": "replan_pkg.amago_hooks"}},
        modules={
            "replan_pkg/__init__.py": "",
            "replan_pkg/amago_hooks.py": """
                from amago_core.hooks import hookimpl


                @hookimpl
                def amago_plan_run(request):
                    assert request.plan is request.resolved
                    return request.plan.sized({"schedule": {"epochs": 3}})


                @hookimpl
                def amago_run_planned(request):
                    print("planned", request.resolved.config.schedule.epochs, "->", request.plan.config.schedule.epochs)
            """,
        },
    )
    result = run_console("run", "--env", "tmaze-passive", "--dry-run")
    assert result.returncode == 0, result.stderr
    first, rest = result.stdout.split("\n", 1)
    assert first == "planned 1000 -> 3"
    assert json.loads(rest)["schedule"]["epochs"] == 3  # the plugin's plan is the one that runs
    smoke = run_console("run", "--env", "tmaze-passive", "--smoke", "--dry-run")
    assert smoke.returncode == 0, smoke.stderr
    assert (
        json.loads(smoke.stdout.split("\n", 1)[1])["schedule"]["epochs"] == 2
    )  # --smoke sizes the plugin's plan


def test_a_plugin_that_raises_while_the_cli_is_built_is_left_out_in_one_line(fake_distribution):
    fake_distribution(
        "amago-plugin-raises",
        entry_points={"amago": {"raises": "raises_pkg.hooks"}},
        modules={
            "raises_pkg/__init__.py": "",
            "raises_pkg/hooks.py": """
                from amago_core.hooks import hookimpl

                @hookimpl
                def amago_cli_commands(app):
                    raise RuntimeError("the plugin's own bug")

                @hookimpl
                def amago_run_options():
                    raise KeyError("another")
            """,
        },
    )
    result = run_console("list", "traj-encoders", "--json")
    assert result.returncode == 0, result.stderr
    assert {row["name"] for row in json.loads(result.stdout)} >= {"transformer", "rnn"}
    assert result.stderr.splitlines() == [  # run's options are read first (`config show` takes them), once
        "amago: warning: plugin amago-plugin-raises:raises raised in amago_run_options (KeyError: 'another'); left "
        "out; update that plugin, or turn it off with AMAGO_BLOCK_PLUGINS=<distribution>",
        "amago: warning: plugin amago-plugin-raises:raises raised in amago_cli_commands (RuntimeError: the plugin's "
        "own bug); left out; update that plugin, or turn it off with AMAGO_BLOCK_PLUGINS=<distribution>",
    ]
