"""`amago run` and `amago config show`. torch is imported only inside command bodies.

`amago config show` takes exactly `amago run`'s options and prints what `amago run --dry-run` prints: both go
through :func:`resolve_run_config`, the one place the CLI turns its sources into the config that will run.
"""

from __future__ import annotations

import functools
import inspect
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from amago_core.cli.errors import WRITE_FAILED, DebugFlag, debugging, fail_on_config_error, one_line_errors
from amago_core.cli.output import fail, print_json
from amago_core.hooks.specs import RunOption, RunRequest

if TYPE_CHECKING:
    from amago_core.config.resolve import RunPlan

ConfigFiles = Annotated[
    list[Path] | None,
    typer.Option("-c", "--config", help="Config file (.toml, .json, .yaml); repeatable, later wins."),
]
Overrides = Annotated[
    list[str] | None,
    typer.Option("-o", "--override", help="section.field=value; repeatable, highest precedence."),
]

# The component options `amago run` and `amago sweep` share (one definition each).
EnvOption = Annotated[
    str | None, typer.Option("--env", help="Env id, e.g. tmaze-passive (see `amago list envs`).")
]
TstepEncoderOption = Annotated[str | None, typer.Option("--tstep-encoder", help="Timestep encoder name.")]
TrajEncoderOption = Annotated[str | None, typer.Option("--traj-encoder", help="Trajectory encoder name.")]
AgentOption = Annotated[str | None, typer.Option("--agent", help="Agent name.")]
ExplorationOption = Annotated[str | None, typer.Option("--exploration", help="Exploration name.")]

RESUME_KEEPS_SCHEDULE = (
    "a resumed run keeps the schedule it was sized to; drop --budget, --steps and --smoke with --resume."
)
"""The one line a sizing flag with ``--resume`` gets (``--smoke`` here, amago-tools' ``--budget`` / ``--steps``)."""


def cli_flags(**values: Any) -> dict[str, Any]:
    """CLI flags as a config dict (None: not given)."""
    return {key: value for key, value in values.items() if value is not None}


def default_job() -> dict[str, Any] | None:
    """The base layer when no source names an env: the embedded main job a plugin (``amago``) provides."""
    from amago_core.hooks.manager import hook_manager

    return hook_manager().hook.amago_default_job()


def resolve_run_config(
    files: list[Path], overrides: list[str], flags: dict[str, Any], resume: Path | None
) -> RunPlan:
    """The plan `amago run` would run: sources over the env suite's preset (or the main job), validated.

    A run folder's record (the ``--resume`` folder's, or a ``-c`` file that is one) is data: where to write and
    which cluster to join are never taken from it (one line names what was ignored), and on ``--resume`` only
    the settings of :data:`~amago_core.config.resume.RESUMABLE_SETTINGS` may differ from it.

    Exits 2 with one line per problem when a source, a component or a preset is bad, or a resume would change a
    setting the saved state was trained with (before anything in the run folder is touched).
    """
    from pydantic import ValidationError

    from amago_core.config.resolve import plan_run
    from amago_core.config.sources import RUN_RECORD_NAME, ConfigSourceError
    from amago_core.plugins.errors import PluginError

    sources = list(files)
    if resume is not None:
        resolved = resume / RUN_RECORD_NAME
        if not resume.is_dir():
            what = "is a file" if resume.exists() else "does not exist"
            fail(
                f"cannot resume {resume}: it {what}; pass the run folder to continue ({{ckpt_base_dir}}/{{run_name}}, "
                f"the one holding {RUN_RECORD_NAME}), or drop --resume to start a new run"
            )
        if not resolved.is_file():
            fail(f"cannot resume {resume}: it has no {RUN_RECORD_NAME} (is it a run folder?)")
        sources.insert(0, resolved)
    try:
        plan = plan_run(sources, flags, overrides, default_job=default_job())
    except (ConfigSourceError, ValidationError, PluginError) as exc:
        fail_on_config_error(exc)
    if plan.config.env is None:
        fail("no env chosen: pass --env ID (see `amago list envs`) or set `env` in a -c config file")
    dumped, records = plan.config.model_dump(mode="json"), plan.records
    for path, record in records.items():
        _say_ignored_folder_settings(
            path, record, plan.own, dumped, resumed=resume is not None and path == sources[0]
        )
    if resume is not None:
        _refuse_changes_on_resume(resume, records[sources[0]], dumped)
    return plan


def _say_ignored_folder_settings(
    path: Path, record: Mapping[str, Any], own: Mapping[str, Any], config: dict[str, Any], *, resumed: bool
) -> None:
    """One line naming the settings of a run record that were dropped, that the user's own sources (``own``:
    flags, overrides, their -c files, the environment) do not set again, and that ``config`` (what runs) does
    not happen to share."""
    from amago_core.config.sources import folder_owned_settings, is_set

    ignored = []
    for key, value in folder_owned_settings(record).items():
        section, field = key.split(".")
        if (resumed and section == "run") or is_set(own, section, field):
            continue  # the --resume path names the folder itself; a setting given again is the user's
        if config.get(section, {}).get(field) == value:
            continue
        ignored.append(f"{key}={value!r}")
    if ignored:
        sys.stderr.write(
            f"amago: note: ignored {', '.join(ignored)} from {path}: a run folder's record never chooses where a "
            "run writes or what it connects to (Ray, wandb); pass them again (-o, a flag or your own -c file) to use them.\n"
        )


def _refuse_changes_on_resume(resume: Path, record: Mapping[str, Any], config: dict[str, Any]) -> None:
    """Exits 2 with one line when the resumed config changes a setting the saved state was trained with."""
    from amago_core.config.resume import describe_changes, refused_changes
    from amago_core.config.sources import PROVENANCE_KEY

    saved = {key: value for key, value in record.items() if key != PROVENANCE_KEY}
    refused = refused_changes(saved, config)
    if refused:
        fail(
            f"cannot resume {resume} with {describe_changes(refused)}: a resumed run keeps the settings its "
            "saved state was trained with (only the schedule, logging, rollout, buffer and optimiser-rate "
            "settings listed in docs/tutorial/04-launch.md may change); the run folder is untouched. Drop "
            "them, or start a new run without --resume to change them."
        )


def run_command(
    env: EnvOption = None,
    tstep_encoder: TstepEncoderOption = None,
    traj_encoder: TrajEncoderOption = None,
    agent: AgentOption = None,
    exploration: ExplorationOption = None,
    config: ConfigFiles = None,
    override: Overrides = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the resolved config and stop.")] = False,
    mode: Annotated[str | None, typer.Option("--mode", help="both | collect | learn.")] = None,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="A run folder to continue from its newest checkpoint.")
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Random seed (default: drawn and recorded).")
    ] = None,
    deterministic: Annotated[
        bool, typer.Option("--deterministic", help="Deterministic torch kernels (GPU runs repeat; slower).")
    ] = False,
    name: Annotated[str | None, typer.Option("--name", help="Run name (default: env-encoder-time).")] = None,
    smoke: Annotated[
        bool,
        typer.Option("--smoke", help="A tiny end-to-end run of the same env and components (seconds)."),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bars, notes or summary.")] = False,
    allow_traj_pickles: Annotated[
        bool,
        typer.Option(
            "--allow-traj-pickles",
            help="Read .traj buffer files (pickles; numpy arrays and builtins only). Never taken from a run folder.",
        ),
    ] = False,
    debug: DebugFlag = False,
    **plugin_options: Any,
) -> None:
    """Train an agent: compose env, encoders, agent and exploration from the installed plugins.

    With no arguments it runs amago's embedded main job (a small memory task that trains on a CPU in minutes).
    `--env ID` replaces that job with the env suite's preset: AMAGO's settings for the task, often sized for a
    GPU node (hours to days). `--budget 10m`, `--steps 200k` or `--smoke` size any preset to this machine,
    keeping its update-to-data ratio; `--dry-run` prints the config that would run (sized, with those flags).
    Settings follow the env options you set (a longer corridor, more attempts). Anything you set overrides the
    preset. Ctrl-C (or SIGTERM) stops after the current step and saves a checkpoint; a second Ctrl-C aborts.
    Errors are one line (`--debug` or AMAGO_DEBUG=1: the traceback).
    """
    # Every option by name, taken first (only the parameters are local yet), for the plugins' run hooks.
    options = {name: value for name, value in locals().items() if name != "plugin_options"}
    if mode is not None and mode not in ("both", "collect", "learn"):
        fail(f"--mode must be both, collect or learn (got {mode!r})")
    request = RunRequest(options={**options, **plugin_options}, argv=tuple(sys.argv[1:]))
    _exit_if_taken_over(_hooks().amago_run_begin(request=request))
    run_flags = cli_flags(
        mode=mode,
        seed=seed,
        deterministic=True if deterministic else None,
        name=name if resume is None else (name or resume.name),
    )
    if resume is not None:
        run_flags["ckpt_base_dir"] = str(resume.parent)
    flags = cli_flags(
        env=env,
        tstep_encoder=tstep_encoder,
        traj_encoder=traj_encoder,
        agent=agent,
        exploration=exploration,
        run=run_flags or None,
        logging={"verbose": False} if quiet else None,
    )
    files, overrides = list(config or []), list(override or [])
    plan = resolve_run_config(files, overrides, flags, resume)
    if resume is not None and smoke:
        fail(RESUME_KEEPS_SCHEDULE)
    request = replace(request, plan=plan, resolved=plan)
    replanned = _hooks().amago_plan_run(request=request)  # a plugin's sizing (amago-tools: --budget, --steps)
    if replanned is not None:
        plan = replanned
    if smoke:
        plan = _smoke_sized(plan, announce=not quiet)
    _exit_if_taken_over(_hooks().amago_run_planned(request=replace(request, plan=plan)))
    if dry_run:
        print_json(plan.config.model_dump(mode="json"), exact_floats=True)
        return
    allow = traj_pickles_allowed(plan, allow_traj_pickles)
    if smoke:
        with tempfile.TemporaryDirectory(prefix="amago-smoke-") as folder:
            sized = plan.sized({"run": {"ckpt_base_dir": folder}})
            _train(sized, None, debugging(debug), quiet, allow, smoke=True)
        if not quiet:
            sys.stderr.write("amago: the smoke run passed end to end; its temporary folder was removed.\n")
        return
    _train(plan, resume, debugging(debug), quiet, allow)


def _smoke_sized(plan: RunPlan, *, announce: bool) -> RunPlan:
    """``--smoke``: ``plan`` sized to a tiny end-to-end run of the same components (``config.sizing``); exits 2
    when its schedule cannot be sized. ``announce``: one line on stderr saying what the sized run will do."""
    from pydantic import ValidationError

    from amago_core.config.sizing import BudgetError, describe_schedule, size_schedule, smoke_env_steps

    config, user = plan.config, plan.user
    try:
        sized = plan.sized(size_schedule(config, user, smoke_env_steps(config, user), smoke=True))
    except BudgetError as exc:
        fail(str(exc))
    except ValidationError as exc:  # a user setting the sizing must keep conflicts
        fail_on_config_error(exc)
    if announce:
        sys.stderr.write(f"amago: sized by --smoke: {describe_schedule(sized.config)}\n")
    return sized


def _hooks() -> Any:
    from amago_core.hooks.manager import hook_manager

    return hook_manager().hook


def _exit_if_taken_over(code: int | None) -> None:
    """A run hook that ran the command its own way answered with the exit code: `amago run` ends with it."""
    if code is not None:
        raise typer.Exit(code)


def _say_resumed(experiment: Any) -> None:
    done = experiment.epoch - 1
    message = f"resuming after epoch {done}" if experiment.epoch > 0 else "no checkpoint yet: starting over"
    sys.stderr.write(f"amago: {message} ({experiment.paths.root})\n")


def _smoke_summary(summary: dict[str, Any], metrics: Path, quiet: bool) -> dict[str, Any]:
    """``--smoke``'s summary: how many episodes finished, and no paths into the folder about to be removed.

    A smoke run that finished no episode checked the code path but never a return: it says so in one line.
    """
    from amago_core.experiment.metrics import EPISODES_KEY
    from amago_core.hooks.jsonl_logger import read_metrics

    records = read_metrics(metrics) if metrics.is_file() else []
    counts = {
        split: int(sum(record.get(key, 0) for record in records))
        for split, key in (
            ("train", f"train/{EPISODES_KEY}"),
            ("val", "val/Episodes"),
            ("test", "test/Episodes"),
        )
    }
    removed = ("run_dir", "plots", "checkpoint")
    smoke = {key: value for key, value in summary.items() if key not in removed}
    smoke["episodes_finished"] = counts
    if not any(counts.values()) and not quiet:
        sys.stderr.write(
            f"amago: note: the smoke run finished no episode of {summary['env']} (none ended within its "
            f"{summary['total_frames']} env steps): it checked the code path, not a return. `--steps` with a "
            "few episodes' worth plays them to their end.\n"
        )
    return smoke


def traj_pickles_allowed(plan: RunPlan, flag: bool) -> bool:
    """Whether the run may read ``.traj`` pickles: ``--allow-traj-pickles``, or the user's own sources (not a
    run folder's record) set ``replay.save_trajs_as = "traj"`` (a run writing pickles on the user's word reads
    them back)."""
    replay = plan.own.get("replay")
    return flag or (isinstance(replay, Mapping) and replay.get("save_trajs_as") == "traj")


def plugin_run_options() -> list[RunOption]:
    """The options installed plugins add to `amago run` (hook ``amago_run_options``), in plugin order."""
    return plugin_options("amago_run_options", run_command, "run")


def plugin_options(hook: str, command: Callable[..., None], name: str) -> list[RunOption]:
    """The options installed plugins add to the command ``name`` through ``hook``, in plugin order.

    A name that ``command`` or an earlier plugin already has is left out with a one-line warning naming the
    plugin: the command stays usable, and the author learns which option to rename.
    """
    from amago_core.hooks.manager import hook_manager, warn_once

    taken = set(inspect.signature(command).parameters)
    chosen: list[RunOption] = []
    for plugin, options in hook_manager().call_each(hook):
        for option in options or ():
            if option.name in taken:
                warn_once(  # `run` and `config show` both ask: said once
                    f"amago: warning: plugin {plugin} adds a `{name}` option {option.name!r} that another already "
                    "has; it was left out (rename it in that plugin).\n"
                )
                continue
            taken.add(option.name)
            chosen.append(option)
    return chosen


def with_run_options(
    command: Callable[..., None], extra: list[RunOption], *, drop: tuple[str, ...] = ()
) -> Callable[..., None]:
    """``command`` with the options of `amago run` (amago's own, minus ``drop``, and the plugins' ``extra``,
    before ``--debug``), so every command taking them shares one definition."""
    return with_options(command, run_command, extra, drop=drop)


def with_options(
    command: Callable[..., None],
    own_from: Callable[..., None],
    extra: list[RunOption],
    *,
    drop: tuple[str, ...] = (),
) -> Callable[..., None]:
    """``command`` with the options of ``own_from`` (minus ``drop``) and the plugins' ``extra`` before ``--debug``;
    the plugins' values reach ``command`` as keywords (its ``**plugin_options``)."""
    signature = inspect.signature(own_from, eval_str=True)
    own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD and p.name not in drop]
    added = [
        inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=o.annotation)
        for o in extra
    ]
    params = (
        [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if p.name != "debug"]
        + added
        + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if p.name == "debug"]
    )

    @functools.wraps(command)
    def wrapped(**values: Any) -> None:
        command(**values)

    wrapped.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapped.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return wrapped


def config_show_command(**options: Any) -> None:
    """Print the config that `amago run` with these same options would run (exactly `amago run --dry-run`)."""
    run_command(**options, dry_run=True)


def experiment_or_fail(config: Any, debug: bool, **kwargs: Any) -> Any:
    from amago_core.experiment import Experiment

    with one_line_errors(debug, usage=True):
        return Experiment(config, **kwargs)


def _checkpoint_truth(experiment: Any) -> str:
    """Which checkpoint a failed or stopped run leaves, and how to continue from it (nothing when this process
    was refused the run folder: the error being reported already says what to do with the run there)."""
    from amago_core.experiment.run_lock import ExistingRunError, RunInUseError

    if isinstance(sys.exc_info()[1], ExistingRunError | RunInUseError):  # asked while that error is handled
        return ""
    saved = experiment.paths.saved_epochs()
    if not saved:
        return "No checkpoint was written yet."
    return (
        f"The newest complete checkpoint is epoch {saved[-1]}: `amago run --resume {experiment.paths.root}` "
        "continues from it."
    )


@contextmanager
def _write_failures_exit(experiment: Any, debug: bool) -> Iterator[None]:
    """A failed write into the run folder (disk full, quota, read-only) exits WRITE_FAILED with its one line,
    which already names the checkpoint `--resume` continues from. Every process of a launch raises it; only the
    main process prints it."""
    try:
        yield
    except Exception as exc:
        failure = None if debug else experiment.write_failure(exc)
        if failure is None:
            raise
        accelerator = experiment.accelerator
        if accelerator is not None and not accelerator.is_main_process:
            raise typer.Exit(WRITE_FAILED) from None
        fail(str(failure), code=WRITE_FAILED)


def _train(
    plan: RunPlan,
    resume: Path | None,
    debug: bool,
    quiet: bool,
    allow_traj_pickles: bool,
    smoke: bool = False,
) -> None:
    from amago_core.experiment.signals import TIME_LIMIT
    from amago_core.experiment.train import train

    config = plan.config
    experiment = experiment_or_fail(plan, debug, allow_traj_pickles=allow_traj_pickles)
    with (
        one_line_errors(debug, after=lambda: _checkpoint_truth(experiment)),
        _write_failures_exit(experiment, debug),
    ):
        result = train(experiment, resume=resume is not None, on_start=_say_resumed if resume else None)
        if not experiment.accelerator.is_main_process:
            return
    summary = result.summary()
    if smoke:
        summary = _smoke_summary(summary, experiment.paths.metrics, quiet)
    if not quiet:
        print_json(summary)
    if experiment.stopped_by == TIME_LIMIT:
        if not quiet:
            sys.stderr.write(
                f"amago: schedule.max_minutes={config.schedule.max_minutes:g} reached after epoch "
                f"{experiment.epoch - 1}; the run was saved and tested. {_checkpoint_truth(experiment)}\n"
            )
    elif experiment.stopped_by is not None:
        sys.stderr.write(
            f"amago: stopped by {experiment.stopped_by} after epoch {experiment.epoch - 1}. {_checkpoint_truth(experiment)}\n"
        )
        raise typer.Exit(128 + int(getattr(signal, experiment.stopped_by)))
