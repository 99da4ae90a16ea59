"""`amago eval`'s hooks, from a fake distribution written the way a third party would: options on the command
(``amago_eval_options``), a check before the run loads (``amago_eval_begin``), the test env makers changed
(``amago_eval_test_makers``), entries added to the printed JSON and files sent to backends (``amago_eval_end``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amago_core.config.sources import load_config
from amago_core.experiment import Experiment

HOOKS = """
import json
import sys
from typing import Annotated

import typer

from amago_core.cli.output import fail
from amago_core.hooks import RunOption, hookimpl


@hookimpl
def amago_eval_options():
    return [
        RunOption("mark", Annotated[str | None, typer.Option("--mark", help="Tag this evaluation.")]),
        RunOption("epoch", Annotated[int | None, typer.Option("--my-epoch")]),  # amago eval has `epoch`
    ]


@hookimpl
def amago_eval_begin(request):
    if request.options["mark"] == "bad":
        fail("--mark bad is not a mark")
    print("begin", request.options["mark"], request.epoch, request.section, file=sys.stderr)


@hookimpl
def amago_eval_test_makers(request):
    def wrap(makers):
        print("wrapped", len(makers), "makers of epoch", request.epoch, file=sys.stderr)
        return list(reversed(makers))

    return wrap


class MarkBackend:
    def __init__(self, path):
        self.path = path

    def log(self, metrics, *, step):
        pass

    def log_marks(self, key, paths, *, x_axes):
        self.path.write_text(json.dumps({"key": key, "paths": [str(p) for p in paths], "epoch": x_axes["Epoch"]}))

    def close(self):
        pass


@hookimpl
def amago_eval_log_backends(run_dir):
    return MarkBackend(run_dir / "marks.json")


@hookimpl
def amago_eval_end(request, metrics):
    request.log_files("marks", [request.run_dir / "config.resolved.json"])
    return {"mark": request.options["mark"], "episodes_seen": metrics["Episodes"]}
"""


def _amago(*args: str) -> subprocess.CompletedProcess[str]:
    found = shutil.which("amago", path=str(Path(sys.executable).parent)) or shutil.which("amago")
    assert found is not None, "the `amago` console script is not installed next to this Python"
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([found, *args], capture_output=True, text=True, check=False, env=env)


@pytest.mark.slow
def test_a_plugin_adds_eval_options_wraps_the_test_envs_and_adds_to_the_output(fake_distribution, tiny_job):
    fake_distribution(
        "amago-plugin-mark",
        entry_points={"amago": {"mark": "mark_pkg.amago_hooks"}},
        modules={"mark_pkg/__init__.py": "", "mark_pkg/amago_hooks.py": HOOKS},
    )
    shown = _amago("eval", "--help")
    assert shown.returncode == 0, shown.stderr
    assert "Tag this evaluation." in shown.stdout
    assert shown.stdout.index("--tasks") < shown.stdout.index("--mark") < shown.stdout.index("--debug")
    assert "--my-epoch" not in shown.stdout
    assert [line for line in shown.stderr.splitlines() if "mark" in line] == [
        "amago: warning: plugin amago-plugin-mark:mark adds a `eval` option 'epoch' that another already has; it "
        "was left out (rename it in that plugin)."
    ]

    tiny_job["logging"]["plot"] = False
    tiny_job["schedule"]["epochs"] = 2
    experiment = Experiment(load_config(base=tiny_job, environ={}))
    experiment.start()
    try:
        experiment.learn()
    finally:
        experiment.close()
    run_dir = experiment.paths.root

    refused = _amago("eval", str(run_dir), "--mark", "bad")
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[-1] == "amago: error: --mark bad is not a mark"
    assert "begin" not in refused.stderr

    result = _amago("eval", str(run_dir), "--mark", "m1", "--tasks", "val")
    assert result.returncode == 0, result.stderr
    assert "begin m1 None test-val" in result.stderr.splitlines()
    assert (
        "wrapped 4 makers of epoch 1" in result.stderr.splitlines()
    )  # one per actor; the newest state's epoch
    printed = json.loads(result.stdout)
    assert list(printed)[-3:] == ["mark", "episodes_seen", "tasks"]  # the plugin's entries, then amago's own
    assert printed["mark"] == "m1"
    assert printed["episodes_seen"] == printed["Episodes"]
    marks = json.loads((run_dir / "marks.json").read_text())
    assert marks == {"key": "test-val/marks", "paths": [str(run_dir / "config.resolved.json")], "epoch": 1}
