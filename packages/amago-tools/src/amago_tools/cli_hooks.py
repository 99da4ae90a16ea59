"""amago-tools' hooks (registered as ``tools = "amago_tools.cli_hooks"`` under the ``amago`` entry-point group).

Import-cheap like every hook module: typer and amago-core's torch-free CLI helpers only; the plotting, export and
sizing code (matplotlib, torch, the ONNX exporter, the run that measures this machine) load when a command or hook
runs.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

from amago_core.hooks.specs import EvalRequest, RunOption, RunRequest, hookimpl


@hookimpl
def amago_cli_commands(app: Any) -> None:
    """Adds ``amago plot``, ``amago export``, ``amago plugin new`` and ``amago config reference``."""
    from amago_core.cli.config_cmd import app as config_app
    from amago_tools import plugin_new
    from amago_tools.config_reference_cmd import reference_command
    from amago_tools.export_cmd import export_command
    from amago_tools.plot_cmd import plot_command

    app.command("plot")(plot_command)
    app.command("export")(export_command)
    app.add_typer(plugin_new.app, name="plugin")
    config_app.command("reference")(reference_command)


@hookimpl
def amago_run_options() -> list[RunOption]:
    """Adds ``--budget``, ``--steps`` and ``--no-preflight`` to ``amago run`` and ``amago config show``."""
    from amago_tools import preflight
    from amago_tools.sizing.run_options import run_options

    return [*run_options(), *preflight.run_options()]


@hookimpl(specname="amago_plan_run", wrapper=True)
def check_env_processes_before_planning(request: RunRequest) -> Generator[None, Any, Any]:
    """Checks the env processes of a run that is neither ``--dry-run`` nor ``--smoke`` against this machine,
    before any plugin's ``amago_plan_run`` sizes it (``--budget`` starts them); the plan is theirs."""
    from amago_tools.preflight import check_run

    check_run(request, smoke=False)
    return (yield)


@hookimpl
def amago_plan_run(request: RunRequest) -> Any:
    """Sizes the run to ``--budget`` (measured on this machine) or ``--steps``; None without them."""
    from amago_tools.sizing.run_options import plan_sized

    return plan_sized(request)


@hookimpl(trylast=True)
def amago_run_planned(request: RunRequest) -> None:
    """Says how long a long run takes here before it trains, and checks a ``--smoke`` run's env processes
    against this machine; last, so a plugin that runs the plan its own way (amago-studies' ``--seeds``) has
    taken it over first."""
    from amago_tools.preflight import check_run
    from amago_tools.sizing.run_options import estimate_before_run

    estimate_before_run(request)
    check_run(request, smoke=True)


@hookimpl
def amago_on_start(experiment: Any) -> None:
    """A long run started from Python (``Experiment.start()``) says how long it takes at least, in one line."""
    from amago_tools.sizing.estimate import say_at_start

    say_at_start(experiment)


@hookimpl
def amago_after_run(run_dir: Path, config: dict[str, Any]) -> Sequence[Path] | None:
    """Draws the finished run's learning curves when its config asks for them (``logging.plot``)."""
    if not config.get("logging", {}).get("plot"):
        return None
    from amago_tools.plotting import plot_finished_run

    return plot_finished_run(run_dir)


@hookimpl
def amago_eval_options() -> list[RunOption]:
    """Adds ``--video``, ``--video-episodes``, ``--video-format``, ``--attempts`` and ``--context`` to ``amago
    eval``."""
    from amago_tools.eval_attempts import eval_options as attempts_options
    from amago_tools.eval_video import eval_options as video_options

    return [*video_options(), *attempts_options()]


@hookimpl
def amago_eval_begin(request: EvalRequest) -> list[str] | None:
    """Checks ``--video-format`` before the run is loaded (mp4 needs imageio-ffmpeg), and ``--attempts`` /
    ``--context`` against the run: returns the ``-o`` items they stand for (the attempts options, the val
    horizon of a whole trial, ``run.max_seq_len``)."""
    from amago_tools.eval_attempts import plan_overrides
    from amago_tools.eval_video import check_video_options

    check_video_options(request)
    return plan_overrides(request)


@hookimpl
def amago_eval_test_makers(
    request: EvalRequest,
) -> Callable[[list[Callable[[], Any]]], Sequence[Callable[[], Any]]] | None:
    """With ``--video``: test env 0 records its first episodes to ``RUN_DIR/videos``; with ``--attempts`` or
    ``--context``: every test env records its finished trials' per-attempt metrics."""
    from amago_tools.eval_attempts import recording_makers as attempt_makers
    from amago_tools.eval_video import recording_makers as video_makers

    wrappers = [w for w in (video_makers(request), attempt_makers(request)) if w is not None]
    if len(wrappers) < 2:
        return wrappers[0] if wrappers else None

    def both(makers: list[Callable[[], Any]]) -> Sequence[Callable[[], Any]]:
        for wrap in wrappers:
            makers = list(wrap(makers))
        return makers

    return both


@hookimpl
def amago_eval_end(request: EvalRequest) -> Mapping[str, Any] | None:
    """With ``--video``: the recorded files (``videos`` in the printed JSON, and to wandb when the run uses it);
    with ``--attempts`` / ``--context``: the table by attempt (``attempts``), its files and the verdict."""
    from amago_tools.eval_attempts import attempts_report
    from amago_tools.eval_video import recorded_videos

    added = {**(recorded_videos(request) or {}), **(attempts_report(request) or {})}
    return added or None


@hookimpl
def amago_doctor_checks(report: Any) -> None:
    """`amago doctor`'s build check: each installed component's factory imported and built on a tiny input."""
    from amago_tools.doctor_build import check_builds

    check_builds(report)


@hookimpl
def amago_doctor_run_dir(run_dir: Path, as_json: bool) -> bool:
    """``amago doctor RUN_DIR``: the run folder's disk use by part."""
    from amago_tools.disk_report import report_run_disk_use

    report_run_disk_use(run_dir, as_json)
    return True
