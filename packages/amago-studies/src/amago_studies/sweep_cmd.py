"""`amago sweep` (start or resume a study) and `amago sweep show` (its best trials, importances and plots).

The driver lives in :mod:`amago_studies.sweep`, the report in :mod:`amago_studies.sweep_report`. torch is
never imported here.
"""

from __future__ import annotations

import copy
import json
import os
import secrets
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from amago_core.cli.errors import DebugFlag, fail_on_config_error, one_line_errors
from amago_core.cli.output import fail, print_json
from amago_core.cli.run_cmd import (
    AgentOption,
    ConfigFiles,
    EnvOption,
    ExplorationOption,
    Overrides,
    TrajEncoderOption,
    TstepEncoderOption,
    cli_flags,
)

if TYPE_CHECKING:
    from amago_core.experiment.run_lock import RunLock
    from amago_studies.sweep import SweepFolder, SweepSettings

app = typer.Typer(
    name="sweep",
    help="Search config keys with Optuna: each trial a run folder; `amago sweep show` reports the study.",
    add_completion=False,
    pretty_exceptions_enable=False,
)

DEFAULT_TRIALS = 20
StorageOption = Annotated[
    str | None,
    typer.Option(
        "--storage",
        help="A database URL shared by several workers (postgresql://user:pw@host/db); default: study.db in "
        "the sweep folder. Never taken from a sweep folder.",
    ),
]


@app.callback(invoke_without_command=True)
def sweep_command(
    ctx: typer.Context,
    space: Annotated[
        Path | None,
        typer.Option(
            "--space",
            help="The sweep file (TOML): the config keys to search (its space table) and the objective.",
        ),
    ] = None,
    env: EnvOption = None,
    tstep_encoder: TstepEncoderOption = None,
    traj_encoder: TrajEncoderOption = None,
    agent: AgentOption = None,
    exploration: ExplorationOption = None,
    config: ConfigFiles = None,
    override: Overrides = None,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="The seed every trial runs with (default: drawn and recorded)."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="The sweep folder's name.")] = None,
    steps: Annotated[
        str | None,
        typer.Option("--steps", help="Train env steps of each trial, e.g. 20k: size each to them."),
    ] = None,
    trials: Annotated[
        int | None,
        typer.Option(
            "--trials", help=f"Trials in the study, all workers together (default {DEFAULT_TRIALS})."
        ),
    ] = None,
    parallel: Annotated[
        int | None, typer.Option("--parallel", help="Trials this process runs at a time.")
    ] = None,
    storage: StorageOption = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume", help="A sweep folder: continue its study (another worker: the same command)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check the space and print the sweep's plan; run nothing.")
    ] = False,
    allow_traj_pickles: Annotated[
        bool,
        typer.Option("--allow-traj-pickles", help="Passed to every trial (never taken from a sweep folder)."),
    ] = False,
    debug: DebugFlag = False,
) -> None:
    """Search config keys with Optuna: every trial is an `amago run` in FOLDER/trial_N (resumable, comparable).

    `--space FILE` names the keys and ranges (the space table of a TOML file) and the objective (the mean of the last
    evaluations of a logged metric, by default the val return). Unpromising trials are pruned on their val
    returns; a crashed trial is marked failed and the study goes on. Ctrl-C stops the running trials the clean
    way; `amago sweep --resume FOLDER` continues them. `amago sweep show FOLDER` reports the study.
    """
    if ctx.invoked_subcommand is not None:
        return
    for option, value in (("--trials", trials), ("--parallel", parallel)):
        if value is not None and value < 1:
            fail(f"{option} must be at least 1 (got {value})")
    with one_line_errors(debug):
        if resume is not None:
            given = [
                flag
                for flag, value in (
                    ("--space", space), ("--env", env), ("--tstep-encoder", tstep_encoder),
                    ("--traj-encoder", traj_encoder), ("--agent", agent), ("--exploration", exploration),
                    ("-c", config), ("--seed", seed), ("--name", name), ("--steps", steps), ("--dry-run", dry_run),
                )
                if value not in (None, False, [])
            ]  # fmt: skip
            if given:
                fail(
                    f"{resume} is a sweep: it continues with the space and config it started with; drop "
                    f"{', '.join(given)} (only --trials, --parallel, --storage and connection -o items may be given)"
                )
            raise typer.Exit(
                _resume(
                    resume, trials, parallel, storage, override or [], allow_traj_pickles=allow_traj_pickles
                )
            )
        if space is None:
            fail(
                "amago sweep needs --space FILE (the keys to search), or --resume FOLDER to continue a sweep"
            )
        flags = cli_flags(
            env=env,
            tstep_encoder=tstep_encoder,
            traj_encoder=traj_encoder,
            agent=agent,
            exploration=exploration,
        )
        raise typer.Exit(
            _start(
                space,
                list(config or []),
                list(override or []),
                flags,
                seed=seed,
                name=name,
                steps=steps,
                trials=trials or DEFAULT_TRIALS,
                parallel=parallel or 1,
                storage=storage,
                dry_run=dry_run,
                allow_traj_pickles=allow_traj_pickles,
            )
        )


def _start(
    space: Path,
    files: list[Path],
    overrides: list[str],
    flags: dict[str, Any],
    *,
    seed: int | None,
    name: str | None,
    steps: str | None,
    trials: int,
    parallel: int,
    storage: str | None,
    dry_run: bool,
    allow_traj_pickles: bool,
) -> int:
    from pydantic import ValidationError

    from amago_core.config.sources import (
        FOLDER_OWNED_SETTINGS,
        ConfigSourceError,
        folder_owned_settings,
        merge_layers,
        read_sources,
        without_folder_owned,
    )
    from amago_studies.child_runs import connect_overrides
    from amago_studies.sweep import STUDY_FILE_NAME, SweepFolder, SweepSettings, optuna_module, shown_url
    from amago_studies.sweep_spec import read_sweep_spec

    try:
        spec = read_sweep_spec(space)
    except ValidationError as exc:
        _fail_on_sweep_file(exc, space)
    except ConfigSourceError as exc:
        fail(str(exc))
    try:
        merged = merge_layers(read_sources(files, flags, overrides, environ={}))
    except (ConfigSourceError, ValidationError) as exc:
        fail_on_config_error(exc)
    owned_keys = {f"{section}.{key}" for section, key in FOLDER_OWNED_SETTINGS}
    for param in spec.space:
        if param.key in owned_keys or param.key == "run.seed":
            fail(
                f"space key {param.key!r} is not searchable: a sweep sets it for its trials; drop it from [space]"
            )
    if seed is None:
        # One seed for every trial, so that they differ only in the searched keys.
        seed = secrets.randbelow(2**31)
    merged.setdefault("run", {})["seed"] = seed
    owned = folder_owned_settings(merged)
    connect = connect_overrides(merged)
    table = without_folder_owned(copy.deepcopy(merged))  # sweep.config.json never chooses them

    with tempfile.TemporaryDirectory(prefix="amago-sweep-") as scratch:
        probe = SweepFolder(Path(scratch))
        probe.config.write_text(json.dumps(table, indent=2) + "\n")
        settings = SweepSettings(spec, study="", steps=steps, trials=trials, parallel=parallel)
        base = _checked_space(probe, settings)
    base_dir = Path(owned.get("run.ckpt_base_dir", _default_base_dir()))
    sweep_name = (
        name
        or owned.get("run.name")
        or f"sweep-{base['env'].get('kind', 'env')}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    _check_sweep_name(sweep_name)
    folder = SweepFolder(base_dir / sweep_name)
    url = storage or f"sqlite:///{(folder.database).resolve()}"
    record = {
        "study": sweep_name,
        "storage": STUDY_FILE_NAME if storage is None else shown_url(storage),
        "external_storage": storage is not None,
        "spec": spec.as_table(),
        "steps": steps,
        "trials": trials,
        "parallel": parallel,
        "seed": seed,
        "command": ["amago", *sys.argv[1:]],
        "config": folder.config.name,
    }
    if dry_run:
        print_json({"folder": str(folder.root), **record, "space": [p.describe() for p in spec.space]})
        return 0
    optuna_module()  # a missing Optuna is one line before anything is written
    if folder.root.exists() and (not folder.root.is_dir() or any(folder.root.iterdir())):
        fail(
            f"{folder.root} already exists: `amago sweep --resume {folder.root}` continues it, or pass another --name"
        )
    settings = SweepSettings(spec, study=sweep_name, steps=steps, trials=trials, parallel=parallel)
    if storage is not None:  # a server that cannot be reached leaves no folder behind
        study = _open_study(settings, url, create=True, folder=folder)
    folder.root.mkdir(parents=True, exist_ok=True)
    lock = _hold(folder, external=storage is not None)
    try:
        if storage is None:
            study = _open_study(settings, url, create=True, folder=folder)
        from amago_core.io import atomic_write_json, atomic_write_text

        atomic_write_text(folder.config, json.dumps(table, indent=2) + "\n", root=folder.root)
        atomic_write_json(folder.record, record, root=folder.root)
        sys.stderr.write(
            f"amago: sweep {sweep_name}: {trials} trials, {parallel} at a time, into {folder.root} "
            f"(study: {record['storage']})\n"
        )
        return _drive(folder, settings, study, connect, allow_traj_pickles)
    finally:
        if lock is not None:
            lock.release()


def _check_sweep_name(name: str) -> None:
    """Exits 2 when the sweep's name is no plain folder name (``../x``, ``/abs``): it names a folder under
    ``run.ckpt_base_dir`` by the rule of a run's name, so that a sweep never writes elsewhere."""
    from pydantic import ValidationError

    from amago_core.config.experiment import RunSection

    try:
        RunSection(name=name)
    except ValidationError as exc:
        problem = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        fail(f"sweep name {name!r} {problem}; pass --name NAME")


def _fail_on_sweep_file(exc: Any, path: Path | str) -> NoReturn:
    """Exits 2 with one line per problem of a sweep file, each naming the file."""
    from amago_core.config.errors import describe_validation_error

    lines = describe_validation_error(exc, source=f"sweep file {path}")
    for line in lines[:-1]:
        sys.stderr.write(f"amago: error: {line}\n")
    fail(lines[-1])


def _default_base_dir() -> str:
    """``run.ckpt_base_dir``'s default (read from the config class, not copied)."""
    from amago_core.config.experiment import RunSection

    return str(RunSection.model_fields["ckpt_base_dir"].default)


def _checked_space(folder: SweepFolder, settings: SweepSettings) -> dict[str, Any]:
    """Resolves the config at every choice and both ends of every range (one key at a time) and returns the
    config at the first values; exits 2 naming the key and value that make no valid config."""
    from amago_studies.sweep import TrialConfigError, trial_config

    first = {param.key: param.probe_values()[0] for param in settings.spec.space}

    def checked(values: dict[str, Any], key: str) -> dict[str, Any]:
        try:
            return trial_config(folder, settings, values)
        except TrialConfigError as exc:
            fail(f"space key {key!r} = {values[key]!r} makes no valid config: {exc}")

    base = checked(first, settings.spec.space[0].key)
    for param in settings.spec.space:
        for value in param.probe_values()[1:]:  # the first value of every key is in `base` already
            checked({**first, param.key: value}, param.key)
    return base


def _open_study(settings: SweepSettings, url: str, *, create: bool, folder: SweepFolder) -> Any:
    from amago_studies.sweep import open_storage, optuna_module, study_objects

    optuna = optuna_module()
    storage = open_storage(url)
    sampler, pruner = study_objects(settings.spec)
    try:
        if create:
            study = optuna.create_study(
                storage=storage,
                study_name=settings.study,
                sampler=sampler,
                pruner=pruner,
                direction=settings.spec.direction,
            )
            for values in settings.spec.enqueue:  # they run first, and count among the trials
                study.enqueue_trial(dict(values))
            return study
        return optuna.load_study(study_name=settings.study, storage=storage, sampler=sampler, pruner=pruner)
    except optuna.exceptions.DuplicatedStudyError:
        fail(
            f"the storage already holds a study named {settings.study!r}: `amago sweep --resume {folder.root} "
            "--storage URL` joins it, or pass another --name"
        )
    except KeyError:
        fail(
            f"the storage holds no study named {settings.study!r}; is --storage the database {folder.root} "
            "was started with?"
        )


def _resume(
    root: Path,
    trials: int | None,
    parallel: int | None,
    storage: str | None,
    overrides: list[str],
    *,
    allow_traj_pickles: bool,
) -> int:
    from pydantic import ValidationError

    from amago_core.io import atomic_write_json
    from amago_studies.child_runs import connect_overrides_only
    from amago_studies.sweep import SweepFolder, SweepSettings
    from amago_studies.sweep_spec import SweepSpec

    folder = SweepFolder(root)
    if not folder.record.is_file():
        fail(f"{root} is not a sweep folder (it has no sweep.json); `amago sweep --space FILE` starts one")
    record = folder.read_record()
    try:
        spec = SweepSpec.model_validate(record.get("spec"))
    except ValidationError as exc:
        _fail_on_sweep_file(exc, folder.record)
    external = bool(record.get("external_storage"))
    if external and storage is None:
        fail(
            f"{root}'s study is in {record.get('storage')}: pass --storage URL again (a sweep folder never "
            "chooses what it connects to)"
        )
    if not external and storage is not None:
        fail(f"{root}'s study is {folder.database} in the folder itself; drop --storage")
    url = storage or f"sqlite:///{folder.database.resolve()}"
    steps = record.get("steps")
    settings = SweepSettings(
        spec,
        study=str(record["study"]),
        steps=str(steps) if steps is not None else None,
        trials=trials or _recorded_count(record, "trials", DEFAULT_TRIALS, folder),
        parallel=parallel or _recorded_count(record, "parallel", 1, folder),
    )
    connect = connect_overrides_only(root, overrides, "a sweep")
    lock = _hold(folder, external=external)
    try:
        _check_folder(folder, external=external)  # before the study opens: a refusal changes nothing
        study = _open_study(settings, url, create=False, folder=folder)
        if trials is not None:
            atomic_write_json(folder.record, {**record, "trials": trials}, root=folder.root)
        reclaimed = _reclaim_abandoned(study, folder)
        if reclaimed:
            sys.stderr.write(
                f"amago: trials {', '.join(map(str, reclaimed))} lost their driver; they resume\n"
            )
        return _drive(folder, settings, study, connect, allow_traj_pickles)
    finally:
        if lock is not None:
            lock.release()


def _recorded_count(record: dict[str, Any], key: str, default: int, folder: SweepFolder) -> int:
    """A positive count the sweep record keeps (``trials``, ``parallel``); exits 2 naming a bad one."""
    value = record.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        fail(
            f"{folder.record} has {key} = {value!r}, not a count of at least 1 (was it edited by hand?); "
            f"pass --{key} N"
        )
    return value


def _hold(folder: SweepFolder, *, external: bool) -> RunLock | None:
    """The sweep folder's lock for this driver (one line naming the holder when another driver has it).

    Only a sweep whose study is the folder's own ``study.db`` is locked: workers that share a study in a
    database server (``--storage``) may share the folder too (a shared mount), the server hands each its own
    trials, and each trial's run holds its own lock.
    """
    if external:
        return None
    from amago_core.experiment.run_lock import acquire
    from amago_studies.sweep import LOCK_ROLE

    return acquire(folder.root, LOCK_ROLE)


def _check_folder(folder: SweepFolder, *, external: bool) -> None:
    """Refuses (one line) a sweep folder with a trial folder that is a link or a file, a linked ``logs/``,
    ``configs/`` or ``plots/``, or a ``study.db`` that is a symlink or a hard link (when the study is there)."""
    folder.check_contents()
    if not external:
        folder.check_database()


def _reclaim_abandoned(study: Any, folder: SweepFolder) -> list[int]:
    """Puts back as waiting the running trials of this folder whose driver, on this machine, is gone (killed
    without a chance to stop them): their process ended with it, and their checkpoints resume."""
    from amago_studies.sweep import optuna_module

    optuna = optuna_module()
    host, here = socket.gethostname(), str(folder.root.resolve())
    reclaimed = []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        worker = trial.user_attrs.get("worker")
        # Which driver ran it is compared, never used as a path: a trial's folder is named by its number.
        if not isinstance(worker, dict) or worker.get("host") != host or worker.get("folder") != here:
            continue
        pid = worker.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or _alive(pid):
            continue
        study._storage.set_trial_state_values(trial._trial_id, optuna.trial.TrialState.WAITING)
        reclaimed.append(trial.number)
    return reclaimed


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _drive(
    folder: SweepFolder, settings: SweepSettings, study: Any, connect: list[str], allow_traj_pickles: bool
) -> int:
    from amago_studies.sweep import SweepDriver
    from amago_studies.sweep_report import study_summary

    code = SweepDriver(folder, settings, study, connect=connect, allow_traj_pickles=allow_traj_pickles).run()
    if code != 130:
        print_json(study_summary(study, folder, settings.spec, top=3), exact_floats=True)
        sys.stderr.write(
            f"amago: `amago sweep show {folder.root}` prints the best trials and draws the plots\n"
        )
    return code


@app.command("show")
def show_command(
    folder: Annotated[Path, typer.Argument(help="A sweep folder.")],
    top: Annotated[int, typer.Option("--top", help="How many of the best trials to list.")] = 5,
    storage: StorageOption = None,
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write Optuna's plots as PNG.")] = True,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")
    ] = False,
    debug: DebugFlag = False,
) -> None:
    """The best trials, the parameter importances, and Optuna's plots (PNG in FOLDER/plots/)."""
    from amago_studies.sweep import STUDY_FILE_NAME, SweepFolder, SweepSettings
    from amago_studies.sweep_report import show_study

    with one_line_errors(debug):
        sweep = SweepFolder(folder)
        if not sweep.record.is_file():
            fail(f"{folder} is not a sweep folder (it has no sweep.json)")
        record = sweep.read_record()
        external = bool(record.get("external_storage"))
        if external and storage is None:
            fail(f"{folder}'s study is in {record.get('storage')}: pass --storage URL")
        url = storage or f"sqlite:///{sweep.database.resolve()}"
        _check_folder(sweep, external=external)  # the report writes plots/ and SQLite writes study.db
        if not external and not sweep.database.is_file():
            fail(f"{folder} has no {STUDY_FILE_NAME}; was the sweep started with --storage?")
        from amago_studies.sweep_spec import SweepSpec

        spec = SweepSpec.model_validate(record.get("spec"))
        settings = SweepSettings(spec, study=str(record["study"]), steps=None, trials=1, parallel=1)
        study = _open_study(settings, url, create=False, folder=sweep)
        show_study(study, sweep, spec, top=top, plots=plots, as_json=as_json)
