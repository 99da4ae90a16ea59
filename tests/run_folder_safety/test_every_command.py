"""Every command of the CLI, pointed at planted folders, changes no file outside them and never tracebacks.

The commands come from the Typer app itself (every leaf command and every group that runs on its own, the
plugins' included), so a command added later is covered without editing this test. Each gets the planted
folders for its path arguments (a run folder, a seed group and a sweep folder, whose places to write are links
to someone else's files and whose members link to someone else's run, one trap per folder since a command stops
at the first; a Markdown page that is a link); the commands that resume, evaluate, export or rewrite get the
arguments that make them write (:data:`VARIANTS`).
Whatever each command answers (a result, or a refusal), every file outside the planted folders keeps its bytes,
and an error is a line, not an uncaught exception.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import snapshot
from test_sweep_gate import make_sweep

from amago_core.cli.app import app

RUN_TRAPS = ("run_plots", "run_export", "run_videos", "run_metrics")
"""Planted run folders, one trap each (a command refuses at the first it meets): ``plots/``, ``export/`` or
``videos/`` linked to someone else's folder, or ``metrics.jsonl`` a hard link to someone else's file."""

VARIANTS: dict[tuple[str, ...], list[list[str]]] = {
    ("run",): [
        *(["--resume", f"{{{trap}}}", "-o", "schedule.epochs=3", "--quiet"] for trap in RUN_TRAPS),
        *(["--resume", f"{{{trap}}}", "--quiet"] for trap in ("group_seed", "group_logs")),
        ["--resume", "{missing}"],
    ],
    ("eval",): [[f"{{{trap}}}", "--episodes", "2", "--timesteps", "20", "--video"] for trap in RUN_TRAPS],
    ("compare",): [["{group_seed}"], ["{group_logs}"], ["{run_metrics}", "{run_plots}"]],
    ("sweep",): [["--resume", f"{{{trap}}}"] for trap in ("sweep_trial", "sweep_db", "sweep_logs")],
    ("sweep", "show"): [[f"{{{trap}}}"] for trap in ("sweep_trial", "sweep_db", "sweep_plots")],
    ("migrate-gin",): [["--reference", "--update", "{page}"]],
    ("config", "reference"): [["--update", "{page}"]],
    ("import-amago",): [[f"{{{trap}}}", f"{{{trap}}}"] for trap in RUN_TRAPS],
    ("bench", "memory"): [
        [
            f"{{{trap}}}",
            "--memories",
            "gru",
            "--tasks",
            "tmaze-passive",
            "--steps",
            "100",
            "--seeds",
            "1",
            *only,
        ]
        for trap in (*RUN_TRAPS, "group_seed", "group_logs")
        for only in ([], ["--report-only"])
    ],
}
"""The arguments that make a command write, resume or delete, per command path; the others get generic ones
(:func:`_generic_args`, once per planted run folder). Long-running commands without a folder to point at
(``run`` alone trains the main job) are only run this way."""


def _commands() -> list[tuple[tuple[str, ...], Any]]:
    """Every command path of the app with its click command: leaves, and groups that run without a subcommand."""
    found: list[tuple[tuple[str, ...], Any]] = []

    def walk(path: tuple[str, ...], command: Any) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is None or (path and getattr(command, "invoke_without_command", False)):
            found.append((path, command))
        for name, sub in (subcommands or {}).items():
            walk((*path, name), sub)

    walk((), typer.main.get_command(app))
    return found


COMMANDS = _commands()


def _generic_args(command: Any, trap: str) -> list[str]:
    """The planted folder ``trap`` for each required path-like argument or option, a plain word for any other."""
    args: list[str] = []
    for param in command.params:
        if not param.required:
            continue
        # typer ships its own click: the declared type is read duck-typed (`bare_type()`, else click's `type`).
        kind = param.bare_type() if hasattr(param, "bare_type") else type(param.type).__name__
        value = f"{{{trap}}}" if "path" in str(kind).lower() or "dir" in param.name else "x"
        args += [value] if getattr(param, "param_type_name", "") == "argument" else [param.opts[0], value]
    return args


def _invocations() -> list[Any]:
    cases = []
    for path, command in COMMANDS:
        generic = [_generic_args(command, trap) for trap in RUN_TRAPS]
        unique = [args for number, args in enumerate(generic) if args not in generic[:number]]
        for number, args in enumerate(VARIANTS.get(path) or unique):
            cases.append(pytest.param(path, args, id=f"{' '.join(path)}-{number}"))
    return cases


def _link(place: Path, target: Path) -> None:
    if place.is_dir() and not place.is_symlink():
        shutil.rmtree(place)
    elif place.exists() or place.is_symlink():
        place.unlink()
    place.symlink_to(target)


@pytest.fixture
def planted(tmp_path, finished_run) -> dict[str, Path]:
    """The planted folders by trap name (see :data:`RUN_TRAPS`; ``group_*``, ``sweep_*``, ``page``), the folder
    the command is typed in (``shell``) and ``outside``: someone else's files, which no command may change."""
    outside = tmp_path / "outside"
    victim = outside / "victim"
    shutil.copytree(finished_run, victim, symlinks=True)
    for name in ("plots", "export", "videos", "logs", "configs"):
        (outside / name).mkdir()
        (outside / name / "theirs.txt").write_text("theirs\n")
    (outside / "notes.md").write_text("<!-- BEGIN generated -->\ntheirs\n<!-- END generated -->\n")
    runs = tmp_path / "runs"
    folders: dict[str, Path] = {"missing": runs / "missing", "outside": outside}

    for trap in RUN_TRAPS:
        run = folders[trap] = runs / trap
        shutil.copytree(finished_run, run, symlinks=True)
        name = trap.removeprefix("run_")
        if name == "metrics":
            shutil.copy(run / "metrics.jsonl", outside / "metrics.jsonl")
            (run / "metrics.jsonl").unlink()
            os.link(outside / "metrics.jsonl", run / "metrics.jsonl")
        else:
            _link(run / name, outside / name)

    for trap, member in (("group_seed", "seed_0"), ("group_logs", "logs")):
        group = folders[trap] = runs / trap
        group.mkdir()
        (group / "seeds.json").write_text(json.dumps({"seeds": [0, 1], "command": [], "parallel": 1}))
        (group / member).symlink_to(victim if member == "seed_0" else outside / "logs")

    for trap, member in (("sweep_trial", "trial_0"), ("sweep_logs", "logs"), ("sweep_plots", "plots")):
        sweep = folders[trap] = make_sweep(tmp_path / trap, trials=3, finished=1)
        (sweep / member).symlink_to(victim if member == "trial_0" else outside / member)
    sweep = folders["sweep_db"] = make_sweep(tmp_path / "sweep_db", trials=3, finished=1)
    shutil.move(sweep / "study.db", outside / "study.db")
    (sweep / "study.db").symlink_to(outside / "study.db")

    shell = folders["shell"] = tmp_path / "shell"  # the folder the command is typed in
    shell.mkdir()
    folders["page"] = shell / "page.md"
    folders["page"].symlink_to(outside / "notes.md")
    return folders


def test_every_command_of_the_app_is_walked():
    paths = {path for path, _ in COMMANDS}
    assert {
        ("run",),
        ("eval",),
        ("sweep",),
        ("sweep", "show"),
        ("compare",),
        ("export",),
        ("plot",),
        ("bench", "memory"),
    } <= paths
    assert {("doctor",), ("import-amago",), ("migrate-gin",), ("config", "reference")} <= paths


@pytest.mark.slow
@pytest.mark.parametrize(("path", "args"), _invocations())
def test_a_command_on_planted_folders_changes_nothing_outside(path, args, planted, monkeypatch):
    monkeypatch.chdir(planted["shell"])
    for name in [k for k in os.environ if k.startswith("AMAGO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AMAGO_RUN__TORCH_THREADS", "1")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    before = snapshot(planted["outside"])
    argv = [*path, *(arg.format(**{k: str(v) for k, v in planted.items()}) for arg in args)]
    result = CliRunner().invoke(app, argv)
    assert snapshot(planted["outside"]) == before, f"`amago {' '.join(argv)}` changed files outside"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"`amago {' '.join(argv)}` raised instead of saying one line: {result.exception!r}\n{result.output}"
    )
