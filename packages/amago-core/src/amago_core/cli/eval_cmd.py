"""`amago eval`: use a finished (or running) run folder. torch is imported only inside command bodies.

`amago eval` never needs wandb or an API key: when the run logged to wandb, its test metrics (and a plugin's files,
amago-tools' videos) are added to that wandb run if wandb is usable here, and otherwise stay in the run folder,
said in one line. Plugins add options (hook ``amago_eval_options``) and act on the evaluation through the eval
hooks (``amago_eval_begin``, ``amago_eval_test_makers``, ``amago_eval_end``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from amago_core.cli.errors import DebugFlag, debugging, fail_on_config_error, one_line_errors
from amago_core.cli.output import fail, print_json
from amago_core.cli.run_cmd import cli_flags, experiment_or_fail, plugin_options, with_options
from amago_core.hooks.specs import EvalRequest, RunOption

RunDir = Annotated[Path, typer.Argument(help="A run folder: {ckpt_base_dir}/{run_name}.")]


def eval_command(
    run_dir: RunDir,
    env: Annotated[str | None, typer.Option("--env", help="Evaluate on another env id.")] = None,
    episodes: Annotated[int | None, typer.Option("--episodes", help="Stop after this many episodes.")] = None,
    timesteps: Annotated[
        int | None, typer.Option("--timesteps", help="Steps per env (default: the run's val setting).")
    ] = None,
    epoch: Annotated[
        int | None, typer.Option("--epoch", help="Weights of this epoch (default: latest).")
    ] = None,
    tasks: Annotated[
        str,
        typer.Option(
            "--tasks",
            help="Tasks to score on: test (the run's test split, the default), val or train (the run's own "
            "splits), or unseen (tasks held out of training, for suites that can tell).",
        ),
    ] = "test",
    debug: DebugFlag = False,
    **plugin_options: Any,
) -> None:
    """Evaluate a run's policy (latest weights unless --epoch) and print the metrics as JSON.

    The JSON's ``tasks`` entry says which tasks were used (``choice`` and the suite's description of them).
    """
    # Every option by name, taken first (only the parameters are local yet), for the plugins' eval hooks.
    options = {name: value for name, value in locals().items() if name != "plugin_options"}
    from pydantic import ValidationError

    from amago_core.config.sources import ConfigSourceError, load_config
    from amago_core.hooks.manager import hook_manager
    from amago_core.plugins.errors import PluginError

    resolved_file = run_dir / "config.resolved.json"
    if not resolved_file.is_file():
        if (run_dir / "ckpts" / "config.txt").is_file():
            fail(
                f"{run_dir} is an AMAGO run folder; convert it with `amago import-amago RUN_DIR OUT`, then eval OUT"
            )
        fail(f"{run_dir} has no config.resolved.json; pass a run folder ({{ckpt_base_dir}}/{{run_name}})")
    tasks = _tasks_or_fail(tasks)
    # Only the run's own test split logs as `test/`; other tasks get their own section, so that
    # `amago compare` never takes a pass on training or held-out tasks for the run's test result.
    section = "test" if tasks == "test" else f"test-{tasks}"
    request = EvalRequest(options={**options, **plugin_options}, run_dir=run_dir, section=section)
    hooks = hook_manager().hook
    hooks.amago_eval_begin(request=request)
    record = _read_record(resolved_file)
    logging_section = record.get("logging")
    trained_with_wandb = isinstance(logging_section, dict) and bool(logging_section.get("log_to_wandb"))
    flags = cli_flags(
        env=env,
        run={"name": run_dir.name, "ckpt_base_dir": str(run_dir.parent)},
        # No new wandb run: the training's own run is resumed below when wandb is usable here.
        logging={"verbose": False, "log_to_wandb": False},
    )
    try:
        config = load_config([resolved_file], flags=flags).resolved()
    except (ConfigSourceError, ValidationError, PluginError) as exc:
        fail_on_config_error(exc)
    debug = debugging(debug)
    experiment = experiment_or_fail(config, debug, evaluation_only=True)
    make_env, used_tasks = _task_env_or_fail(experiment.make_test_env, tasks)
    added: dict[str, Any] = {}
    with one_line_errors(debug):
        experiment.start()
        try:
            weights = (
                experiment.paths.policy_at(epoch) if epoch is not None else experiment.paths.latest_policy
            )
            if not weights.is_file():
                fail(f"no policy weights at {weights}; train first, or pick an --epoch with a checkpoint")
            experiment.checkpoints.load_path(weights, whole_state=False)
            trained_epoch = _take_trained_progress(experiment, epoch)
            _add_eval_backends(experiment, run_dir, record, trained_with_wandb)
            steps = timesteps or config.schedule.val_timesteps_per_epoch
            request = replace(
                request,
                epoch=trained_epoch,
                log_files=lambda kind, paths: experiment.reports.files(kind, paths, section),
            )
            wrappers = list(reversed(hooks.amago_eval_test_makers(request=request)))  # in install order
            metrics: dict[str, Any] = experiment.evaluate_test(
                make_env,
                steps,
                episodes=episodes,
                wrap_test_makers=_chained(wrappers) if wrappers else None,
                section=section,
            )
            for entries in reversed(hooks.amago_eval_end(request=request, metrics=metrics)):
                added.update(entries)
        finally:
            experiment.close()
    metrics.update(added)
    metrics["tasks"] = used_tasks
    print_json(metrics)


def plugin_eval_options() -> list[RunOption]:
    """The options installed plugins add to `amago eval` (hook ``amago_eval_options``), in plugin order."""
    return plugin_options("amago_eval_options", eval_command, "eval")


def with_eval_options() -> Any:
    """``amago eval`` with the options installed plugins add, before ``--debug``."""
    return with_options(eval_command, eval_command, plugin_eval_options())


def _chained(wrappers: list[Any]) -> Any:
    """One maker wrapper applying ``wrappers`` in turn."""

    def chained(makers: list[Any]) -> list[Any]:
        for wrap in wrappers:
            makers = list(wrap(makers))
        return makers

    return chained


def _tasks_or_fail(tasks: str) -> str:
    from amago_core.config.task_split import TASK_CHOICES
    from amago_core.suggest import did_you_mean

    if tasks not in TASK_CHOICES:
        fail(f"--tasks {tasks!r} is not one of {', '.join(TASK_CHOICES)}.{did_you_mean(tasks, TASK_CHOICES)}")
    return tasks


def _task_env_or_fail(make_test_env: Any, tasks: str) -> tuple[Any, dict[str, Any]]:
    """The env maker of ``--tasks`` and the ``tasks`` entry of the output (the choice and what it draws).

    ``test`` keeps the run's own test maker (what ``amago eval`` always used); the others need the run's env
    suite, which the makers of a config-built run carry.
    """
    from dataclasses import replace

    from amago_core.config.task_split import UnseenEnvMaker, UnseenTasksError, suite_task_splits
    from amago_core.experiment.pools import SuiteEnvMaker

    if not isinstance(make_test_env, SuiteEnvMaker):
        if tasks != "test":
            fail(
                f"--tasks {tasks} needs the run's env suite, but its envs come from Python env makers; use --tasks test"
            )
        return make_test_env, {"choice": tasks, "suite": None, "description": "the run's own test env makers"}
    splits = suite_task_splits(make_test_env.suite)
    try:
        used = splits.tasks(tasks)
    except UnseenTasksError as exc:
        fail(str(exc))
    entry = {"choice": tasks, "suite": splits.suite, **used.to_json()}
    if tasks == "unseen":
        return UnseenEnvMaker(make_test_env.suite), entry
    if tasks == "test":
        return make_test_env, entry
    split: Literal["train", "val"] = "train" if tasks == "train" else "val"
    return replace(make_test_env, split=split), entry


def _read_record(resolved_file: Path) -> dict[str, Any]:
    """The run's record as written (read once: the training's wandb choice and the plugins' eval backends use
    it); {} when it cannot be read, which loading the config below reports."""
    try:
        record = json.loads(resolved_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return record if isinstance(record, dict) else {}


def _take_trained_progress(experiment: Any, epoch: int | None) -> int | None:
    """Gives the experiment the counters of the training state saved with the evaluated weights (their epoch,
    frames, gradient steps), so test records land at the right x-axes; returns that epoch (None: unknown)."""
    from amago_core.experiment.checkpoints import Progress, read_progress

    states = [(e, folder) for e, folder in experiment.paths.saved_states() if epoch is None or e == epoch]
    if not states:
        if epoch is not None:
            experiment.counters.restore(Progress(epoch=epoch))
        return epoch
    try:
        progress = Progress.from_json(read_progress(states[-1][1]))
    except (OSError, ValueError, KeyError, TypeError):
        return epoch  # a damaged state: the weights are still evaluated, at unknown x-axes
    experiment.counters.restore(progress)  # `amago compare --x minutes` places it by its wall time too
    return progress.epoch


def _add_eval_backends(
    experiment: Any, run_dir: Path, record: dict[str, Any], trained_with_wandb: bool
) -> None:
    """Adds the plugins' backends for this evaluation (hook ``amago_eval_log_backends``: the training's wandb run,
    resumed); a run trained with wandb and no plugin to resume it says so in one line."""
    from amago_core.experiment.logger import backends_of, wandb_backend_installed
    from amago_core.hooks.manager import hook_manager

    answers = hook_manager().hook.amago_eval_log_backends(
        run_dir=run_dir, config=record, metrics=experiment.paths.metrics
    )
    for backend in backends_of(reversed(answers)):  # pluggy answers last-installed first
        experiment.logger.attach(backend)
    if trained_with_wandb and not answers and not wandb_backend_installed():
        sys.stderr.write(
            "amago: warning: the run was trained with wandb, but amago-wandb is not installed (pip install "
            f"amago-wandb); test metrics written to {experiment.paths.metrics} only\n"
        )
