"""Small CLI items: `amago --version`, bounded unknown-task lines, rounded JSON floats, one plot panel per val
metric, optional libraries named in one line (the doctor's line for procgen's own environment:
test_doctor_own_environment.py)."""

from __future__ import annotations

import itertools
import json
import math
import sys
from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from amago_core.cli import version as version_module
from amago_core.cli.app import app
from amago_core.cli.output import print_json, readable_float
from amago_core.optional import MissingOptionalDependencyError, require
from amago_core.plugins.registry import registries

runner = CliRunner()


# --- amago --version ---------------------------------------------------------------------------------------


def test_version_prints_each_of_amagos_distributions() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == version_module.own_distributions()
    assert f"amago-core {version('amago-core')}" in lines


def test_amagos_own_distributions_come_from_the_meta_packages_requirements() -> None:
    # The workspace installs the example plugins (amago-plugin-*) too: being installed does not make them amago's.
    assert version_module.own_distributions() == [
        "amago",
        "amago-core",
        "amago-agents",
        "amago-envs",
        "amago-memories",
        "amago-nets",
        "amago-studies",
        "amago-tools",
        "amago-wandb",
    ]


def test_without_the_meta_package_the_installed_amago_distributions_stand_in(monkeypatch) -> None:
    monkeypatch.setattr(version_module, "builtin_distributions", lambda: frozenset({"amago", "amago-core"}))
    monkeypatch.setattr(version_module, "_installed", lambda name: name != "amago")
    names = version_module.own_distributions()
    assert names[:2] == ["amago", "amago-core"]
    assert {"amago-nets", "amago-agents", "amago-envs"} <= set(names)
    assert not any(name.startswith("amago-plugin-") for name in names)

    def version_without_the_meta_package(name: str) -> str:
        if name == "amago":
            raise version_module.metadata.PackageNotFoundError(name)
        return version(name)

    monkeypatch.setattr(version_module.metadata, "version", version_without_the_meta_package)
    lines = version_module.version_lines()
    assert lines[:2] == ["amago (not installed)", f"amago-core {version('amago-core')}"]
    assert f"amago-nets {version('amago-nets')}" in lines


# --- unknown tasks: one bounded line -----------------------------------------------------------------------


def test_an_unknown_task_of_a_large_suite_names_the_closest_ids_a_count_and_the_command() -> None:
    from amago_envs.suites.specs import TASKS_IN_AN_ERROR, check_task

    tasks = (*(f"Game{i:03d}" for i in range(400)), "Pong", "Pooyan")
    with pytest.raises(ValueError, match="has no task 'Pongg'") as excinfo:
        check_task("arcade", "Pongg", tasks)
    message = str(excinfo.value)
    assert "\n" not in message
    assert len(message) < 300
    assert "Did you mean 'Pong'? Closest env ids: arcade-Pong, arcade-Pooyan," in message
    assert message.count("arcade-") == TASKS_IN_AN_ERROR
    assert "(402 tasks in all; `amago list envs arcade` lists them all)." in message


def test_an_unknown_task_of_a_small_suite_names_every_id_closest_first() -> None:
    from amago_envs.suites.specs import TMAZE_TASKS, check_task

    with pytest.raises(ValueError, match=r"Its env ids: tmaze-active, tmaze-passive\.$"):
        check_task("tmaze", "activ", TMAZE_TASKS)


def test_the_cli_blames_the_env_id_not_the_suites_preset() -> None:
    result = runner.invoke(app, ["run", "--env", "tmaze-activ", "--dry-run"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("amago: error: config: env.task: env suite 'tmaze' has no task 'activ'.")
    assert "broken preset" not in lines[0]


def test_show_names_a_few_env_ids_and_the_command_for_all() -> None:
    from amago_core.cli.listing import ENV_IDS_SHOWN

    big = [n for n in registries().env_suites.names() if len(registries().env_suites.spec(n).tasks) > 20]
    if not big:
        pytest.skip("no installed env suite has more than 20 tasks")
    suite = big[0]
    tasks = registries().env_suites.spec(suite).tasks
    result = runner.invoke(app, ["show", "envs", suite], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("env ids:")]
    assert line.count(f"{suite.replace('_', '-')}-") == ENV_IDS_SHOWN
    assert line.endswith(f"({len(tasks)} in all; `amago list envs {suite}` lists them all)")


# --- JSON floats ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        (-1.0000000149011612, -1.0),  # a float32 mean, as AMAGO's returns come out
        (0.30000000000000004, 0.3),
        (2 / 3, 0.666667),
        (3599.4664772826964, 3599.47),
        (1e-9 / 3, 3.33333e-10),
        (123456789.98765432, 123456790.0),  # integer digits are never rounded away
        (3e-4, 3e-4),  # typed values stay exact
        (0.9999, 0.9999),
        (1.23456789, 1.23456789),
        (0.0, 0.0),
    ],
)
def test_computed_floats_keep_six_significant_digits(value: float, printed: float) -> None:
    assert readable_float(value) == printed


def test_readable_float_passes_non_finite_values_through() -> None:
    assert math.isnan(readable_float(math.nan))
    assert readable_float(math.inf) == math.inf


def test_print_json_rounds_metrics_and_keeps_configs_exact(capsys) -> None:
    print_json({"returns": [-1.0000000149011612], "nested": {"fps": 3599.4664772826964}, "episodes": 24})
    out = capsys.readouterr().out
    assert json.loads(out) == {"returns": [-1.0], "nested": {"fps": 3599.47}, "episodes": 24}
    assert "-1.0000000149011612" not in out
    print_json({"std_low": math.exp(-5)}, exact_floats=True)  # a config default must read back unchanged
    assert json.loads(capsys.readouterr().out)["std_low"] == math.exp(-5)


def test_config_show_prints_defaults_exactly() -> None:
    from amago_core.config.resolve import resolve_config

    result = runner.invoke(app, ["config", "show", "--env", "tmaze-passive"])
    assert result.exit_code == 0, result.output
    expected = resolve_config(flags={"env": "tmaze-passive"}, environ={}).model_dump(mode="json")
    assert json.loads(result.stdout) == expected


# --- val_metrics.png: one panel per metric, readable ticks -------------------------------------------------


def _records() -> list[dict[str, float]]:
    records = []
    for i in range(8):
        records.append(
            {
                "total_frames": 1987 * i,
                "Epoch": i,
                "val/Average Total Return (Across All Env Names)": i / 8,
                "val/Average Total Return in TMaze": i / 8,
                "val/Bottom Quintile Total Return in TMaze": i / 10 - 0.5,
                "val/Average Episode 10 Success in TMaze": i / 9,
                "val/Average Episode 2 Success in TMaze": i / 7,
                "val/Episodes": 24.0,
                "val/Env FPS (per_process)": 3000.0 + i,
            }
        )
    return records


MIN_TICK_GAP_PX = 4
"""Neighbouring tick labels closer than this read as one number (``10000120001400``)."""


def _crowded_tick_labels(fig) -> list[str]:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        boxes = [
            (label.get_text(), label.get_window_extent(renderer))
            for label in ax.get_xticklabels()
            if label.get_visible() and label.get_text()
        ]
        boxes = [(text, box) for text, box in boxes if ax.bbox.x0 - 20 <= box.x0 <= ax.bbox.x1 + 20]
        for (text, box), (next_text, next_box) in itertools.pairwise(boxes):
            if next_box.x0 - box.x1 < MIN_TICK_GAP_PX:
                problems.append(f"{ax.get_title()!r}: {text!r} runs into {next_text!r}")
    return problems


def test_val_metrics_gets_one_panel_per_metric_in_natural_order() -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from amago_tools.plotting import metric_panels, val_metric_keys

    records = _records()
    keys = val_metric_keys(records)
    assert keys == [
        "val/Average Episode 2 Success in TMaze",
        "val/Average Episode 10 Success in TMaze",
        "val/Bottom Quintile Total Return in TMaze",
    ]  # returns.png's curves, throughput and a count that never changes (Episodes: 24 each time) are left out
    varying = [{**record, "val/Episodes": 20.0 + record["Epoch"]} for record in records]
    assert "val/Episodes" in val_metric_keys(varying)  # a count that changes says something: kept
    fig = metric_panels(records, keys, title="run")
    try:
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert len(panels) == len(keys)
        assert [ax.get_title().replace("\n", " ") for ax in panels] == [k.removeprefix("val/") for k in keys]
        assert all(len(ax.get_lines()) == 1 for ax in panels)
        assert not _crowded_tick_labels(fig)
        ticks = [
            label.get_text() for label in panels[0].get_xticklabels() if label.get_text() not in {"", "0"}
        ]
        assert ticks
        assert all(text.endswith("k") for text in ticks)  # 10k, not 10000
    finally:
        plt.close(fig)


@pytest.mark.slow
def test_val_metrics_caps_its_panels_and_says_so() -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from amago_tools.plotting import MAX_PANELS, metric_panels

    records = [{"total_frames": 100 * i, **{f"val/m{j}": float(i * j) for j in range(30)}} for i in range(3)]
    fig = metric_panels(records, [f"val/m{j}" for j in range(30)], title="run")
    try:
        assert len([ax for ax in fig.axes if ax.get_visible()]) == MAX_PANELS
        assert fig.get_suptitle() == f"run: first {MAX_PANELS} of 30 val metrics (all in metrics.jsonl)"
    finally:
        plt.close(fig)


def test_plot_run_writes_the_panel_figure(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from amago_tools.plotting import plot_run

    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in _records()) + "\n")
    written = plot_run(tmp_path)
    assert {p.name for p in written} == {"returns.png", "val_metrics.png"}


def test_a_finished_run_without_matplotlib_warns_in_one_line(tmp_path, monkeypatch, capsys) -> None:
    from amago_tools.plotting import plot_finished_run, plot_run

    (tmp_path / "metrics.jsonl").write_text(json.dumps(_records()[0]) + "\n")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails as if not installed
    with pytest.raises(
        MissingOptionalDependencyError, match=r"needs matplotlib: pip install 'amago-tools\[plot\]'"
    ):
        plot_run(tmp_path)
    assert plot_finished_run(tmp_path) == []
    warning = capsys.readouterr().err.strip()
    assert warning.startswith("amago: warning: no learning curves drawn: drawing learning curves")
    assert warning.endswith("(or set logging.plot=false)")
    assert "\n" not in warning


# --- optional libraries -----------------------------------------------------------------------------------


def test_require_returns_an_installed_module() -> None:
    assert require("json", "none", "anything") is json


def test_require_names_the_extra_in_one_line(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(MissingOptionalDependencyError) as excinfo:
        require("wandb", "wandb", "logging.log_to_wandb")
    assert str(excinfo.value) == "logging.log_to_wandb needs wandb: pip install 'amago-core[wandb]'"


def test_require_keeps_the_error_of_an_installed_library_that_fails_inside(tmp_path, monkeypatch) -> None:
    (tmp_path / "half_installed.py").write_text("import a_dependency_that_is_not_there\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as excinfo:
        require("half_installed", "x", "a feature")
    assert not isinstance(excinfo.value, MissingOptionalDependencyError)
    assert excinfo.value.name == "a_dependency_that_is_not_there"


@pytest.mark.parametrize(
    ("stopped_by", "val_envs", "remote_evaluates", "expected"),
    [
        (None, True, False, True),  # a finished local run
        (None, False, True, True),  # ray.evaluate: validation on the actors, the test pass still runs here
        ("max_minutes", True, False, True),  # a budget's time limit ends a run normally
        ("SIGINT", True, False, False),  # interrupted: resume instead
        (None, False, False, False),  # a run that never evaluates
    ],
)
def test_the_final_test_pass_runs_for_every_finished_run_that_evaluates(
    stopped_by, val_envs, remote_evaluates, expected
) -> None:
    from types import SimpleNamespace

    from amago_core.experiment.train import runs_final_test

    collector = SimpleNamespace(evaluates=remote_evaluates) if remote_evaluates else None
    experiment = SimpleNamespace(
        stopped_by=stopped_by,
        val_envs=object() if val_envs else None,
        collector=collector,
        make_test_env=lambda: None,
    )
    assert runs_final_test(experiment) is expected
