"""`amago sweep`: an Optuna study over config keys, each trial a normal ``amago run`` folder.

A sweep folder ``{run.ckpt_base_dir}/{name}/`` holds

- ``sweep.json`` (:data:`SWEEP_RECORD_NAME`): the search space and objective, the seed, the trial count,
  the command, and where the study lives;
- ``sweep.config.json`` (:data:`SWEEP_CONFIG_NAME`): the user's own config sources merged (files, flags and
  ``-o`` items, before any preset), without the settings a folder never chooses; every trial resolves from it;
- ``study.db``: the Optuna study, unless ``--storage URL`` put it in a database server;
- ``trial_<n>/``: trial n's run folder (resumable with ``amago run --resume``, comparable with ``amago compare``),
  its resolved config in ``configs/trial_<n>.json`` and its output in ``logs/trial_<n>.log``.

A sweep folder is data, like a run folder: a trial's folder is named by the sweep folder and the trial's number
alone (never by a path the study or the record holds), it must be a real folder of the sweep (not a symlink or
a file), and nothing is written, appended or deleted through a link (:mod:`amago_core.io`). While a driver
works on a folder whose study is its own ``study.db`` it holds the folder's lock
(:mod:`amago_core.experiment.run_lock`).

The driver asks Optuna for a trial, resolves and sizes its config here (a bad combination fails that trial in
one line, the study goes on), and starts it as its own process, ``--parallel`` at a time. While a trial runs,
each new value of the objective in its ``metrics.jsonl`` is reported to Optuna; a trial the pruner stops gets
SIGTERM (it saves a checkpoint and exits) and is marked pruned. A finished trial's score is the mean of the
objective's last ``last`` values logged after its first gradient update (of the ones before it only when there
is no other, and its line says so); a crashed one is marked failed, and a driver whose every trial failed exits
1. Ctrl-C or SIGTERM stops the running trials the clean way and puts them back in the study as waiting, so that
``amago sweep --resume`` (on any worker) continues them from their checkpoints. Several workers share a study
through ``--storage`` (PostgreSQL, MySQL): each runs ``amago sweep --resume FOLDER --storage URL`` on a copy (or
a shared mount) of the sweep folder.

torch is never imported here (a ``--budget`` measurement would; sweeps size by ``--steps``).
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amago_core.cli.output import fail
from amago_core.config.sources import RUN_RECORD_NAME
from amago_core.io import UnsafePathError, atomic_write_json, inside, member_folder, refuse_hard_link
from amago_core.optional import require
from amago_studies import STUDIES, SWEEP_RECORD
from amago_studies.child_runs import child_run_command, last_line, start_child
from amago_studies.sweep_spec import DEFAULT_OBJECTIVE, SweepSpec
from amago_tools.plotting import GRADIENT_STEPS

SWEEPING = "amago sweep"
"""The feature named when Optuna is missing."""
SWEEP_RECORD_NAME = SWEEP_RECORD
SWEEP_CONFIG_NAME = "sweep.config.json"
STUDY_FILE_NAME = "study.db"
SQLITE_SIDE_SUFFIXES = ("-journal", "-wal", "-shm")
"""The files SQLite keeps beside a database (``study.db-journal``...): it writes them too."""
TRIAL_FOLDER = re.compile(r"trial_\d+")
"""The name of a trial's run folder in a sweep folder."""
LOCK_ROLE = "sweep"
"""The role a sweep's driver records in the folder's lock (what a second driver's refusal names)."""
FAILURES_IN_A_ROW = 3
"""Trials of one driver that fail one after another, with none finished, before it stops: the base config is
broken, and running the rest of the trials would only fail them too."""


@dataclass(frozen=True)
class SweepFolder:
    """The paths of a sweep folder."""

    root: Path

    @property
    def record(self) -> Path:
        return self.root / SWEEP_RECORD_NAME

    @property
    def config(self) -> Path:
        return self.root / SWEEP_CONFIG_NAME

    @property
    def database(self) -> Path:
        return self.root / STUDY_FILE_NAME

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    def run_dir(self, number: int) -> Path:
        """Trial ``number``'s run folder: named by the sweep folder and the number alone, never by a path the
        study or the record holds (someone else may have written either)."""
        return self.root / f"trial_{number}"

    def member(self, number: int) -> Path:
        """:meth:`run_dir` once checked to be a real folder of the sweep, or not there yet.

        Raises:
            UnsafePathError: a symlink or a file stands where the trial's folder belongs (one line).
        """
        return member_folder(self.root, self.run_dir(number).name)

    def check_contents(self) -> None:
        """Refuses a folder whose trial folders are links or files, or whose ``logs/``, ``configs/`` or ``plots/``
        is a link: checked before a resume or a report writes anything, so that it changes nothing at all.

        Raises:
            UnsafePathError: the first such entry (one line naming it).
        """
        for entry in sorted(os.listdir(self.root)):
            if TRIAL_FOLDER.fullmatch(entry):
                member_folder(self.root, entry)
        for folder in (self.root / "logs", self.root / "configs", self.plots):
            inside(self.root, folder)

    def check_database(self) -> None:
        """Refuses a ``study.db`` (or a SQLite file beside it) that is a symlink or a hard link, before Optuna
        opens it: SQLite writes the database and its journal, and would write through the link.

        Raises:
            UnsafePathError: the first such file (one line naming it and what to do).
        """
        for name in (STUDY_FILE_NAME, *(STUDY_FILE_NAME + suffix for suffix in SQLITE_SIDE_SUFFIXES)):
            path = inside(self.root, self.root / name)
            try:
                links = os.lstat(path).st_nlink
            except FileNotFoundError:
                continue
            refuse_hard_link(path, links)

    def log(self, number: int) -> Path:
        return self.root / "logs" / f"trial_{number}.log"

    def trial_config(self, number: int) -> Path:
        return self.root / "configs" / f"trial_{number}.json"

    def read_record(self) -> dict[str, Any]:
        try:
            record = json.loads(self.record.read_text())
        except (OSError, json.JSONDecodeError, RecursionError) as exc:
            fail(f"cannot read {self.record}: {exc}; is {self.root} a sweep folder made by `amago sweep`?")
        if not isinstance(record, dict) or not isinstance(record.get("study"), str):
            fail(f"{self.record} is not a sweep record (no study name); was it edited by hand?")
        return record


def is_sweep(folder: Path) -> bool:
    """Whether ``folder`` is a sweep folder (it holds the sweep record)."""
    return (folder / SWEEP_RECORD_NAME).is_file()


def shown_url(url: str) -> str:
    """A storage URL with its password hidden (what records and messages show)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL is reported by the storage itself; show only its scheme
        return url.split("://", 1)[0] + "://..."


def optuna_module() -> Any:
    """Optuna, quiet (its per-trial INFO lines would bury the sweep's own), or one line naming the extra."""
    optuna = require("optuna", "sweep", SWEEPING, STUDIES)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def open_storage(url: str) -> Any:
    """Optuna's RDB storage at ``url``; exits 2 with one line when the driver is missing or the server cannot
    be reached."""
    optuna = optuna_module()
    if url.startswith("postgresql"):
        require("psycopg", "sweep", f"{SWEEPING} --storage postgresql://...", STUDIES)
        if url.startswith("postgresql://"):
            url = "postgresql+psycopg://" + url.removeprefix("postgresql://")  # psycopg 3, not psycopg2
    try:
        return optuna.storages.RDBStorage(url, engine_kwargs={"pool_pre_ping": True})
    except Exception as exc:
        first = " ".join(str(exc).split())[:300]
        fail(
            f"cannot open the sweep storage {shown_url(url)}: {first}. Check the URL and that the server is up "
            "(PostgreSQL: postgresql://user:password@host:port/database)."
        )


def study_objects(spec: SweepSpec) -> tuple[Any, Any]:
    """The sampler and pruner a sweep's spec asks for."""
    optuna = optuna_module()
    sampler = optuna.samplers.TPESampler(seed=spec.sampler_seed, n_startup_trials=max(1, spec.startup_trials))
    pruners = optuna.pruners
    pruner: Any
    if spec.pruner == "median":
        pruner = pruners.MedianPruner(n_startup_trials=spec.startup_trials, n_warmup_steps=spec.prune_after)
    elif spec.pruner == "hyperband":
        pruner = pruners.HyperbandPruner(min_resource=max(1, spec.prune_after))
    else:
        pruner = pruners.NopPruner()
    return sampler, pruner


def distributions(spec: SweepSpec) -> dict[str, Any]:
    """Each searched key's Optuna distribution."""
    optuna = optuna_module()
    found: dict[str, Any] = {}
    for param in spec.space:
        if param.choices is not None:
            found[param.key] = optuna.distributions.CategoricalDistribution(list(param.choices))
            continue
        low, high = float(param.low or 0.0), float(param.high or 0.0)
        log = param.kind in ("log_uniform", "log_int")
        if param.kind in ("int", "log_int"):
            step = int(param.step) if param.step is not None else 1
            found[param.key] = optuna.distributions.IntDistribution(int(low), int(high), log=log, step=step)
        else:
            found[param.key] = optuna.distributions.FloatDistribution(low, high, log=log, step=param.step)
    return found


def param_overrides(params: Mapping[str, Any]) -> list[str]:
    """A trial's values as ``-o`` items (JSON values, so that ``"3"`` stays a string and ``3`` a number)."""
    return [f"{key}={json.dumps(value)}" for key, value in params.items()]


@dataclass
class ObjectiveReader:
    """Reads a growing ``metrics.jsonl`` from where it stopped: the driver follows each running trial every
    half second, and a long run's file would otherwise be parsed whole each time.

    Attributes:
        path: the run's ``metrics.jsonl``.
        metric: the key whose values are collected.
        values: ``(step, value)`` of each finite value so far, in order; the step is the record's epoch.
        untrained: the steps of the values whose record says no gradient update had been made yet.
        offset: the bytes read so far (always the end of a whole line).
    """

    path: Path
    metric: str
    values: list[tuple[int, float]] = field(default_factory=list)
    untrained: set[int] = field(default_factory=set)
    offset: int = 0

    def read(self) -> list[tuple[int, float]]:
        """Adds the values of the lines written since the last call and returns every value so far. A line
        without its newline yet (the run is writing it) is left for the next call."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except OSError:
            return self.values
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        for line in complete.decode("utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            value = record.get(self.metric) if isinstance(record, dict) else None
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                step = record.get("Epoch", len(self.values))
                step = int(step) if isinstance(step, int | float) else len(self.values)
                self.values.append((step, float(value)))
                if record.get(GRADIENT_STEPS) == 0:  # evaluated before the first update: the untrained policy
                    self.untrained.add(step)
        return self.values


def objective_values(run_dir: Path, metric: str) -> list[tuple[int, float]]:
    """``(step, value)`` of each finite value of ``metric`` in a run's ``metrics.jsonl``, in order; the step is
    the record's epoch. A line cut short (the run is writing it) is skipped."""
    return ObjectiveReader(run_dir / "metrics.jsonl", metric).read()


def score(values: Sequence[tuple[int, float]], last: int) -> float | None:
    """The mean of the last ``last`` values, or None when there is none."""
    tail = [value for _, value in values[-last:]]
    return sum(tail) / len(tail) if tail else None


@dataclass(frozen=True)
class TrialScore:
    """A finished trial's score and what it averages (what its progress line says).

    Attributes:
        value: the mean of the objective's values it counts.
        evaluations: how many values it averages.
        left_out: values made before the trial's first gradient update that the last ``last`` would have
            counted, left out of it.
        untrained: every value it averages was made before the first gradient update (no later one exists).
    """

    value: float
    evaluations: int
    left_out: int
    untrained: bool

    def describe(self, objective: str) -> str:
        """``val return, mean of the last 3 evaluations; 1 before its first gradient update left out``."""
        counted = (
            "its last evaluation"
            if self.evaluations == 1
            else f"mean of the last {self.evaluations} evaluations"
        )
        text = f"{objective_label(objective)}, {counted}"
        if self.untrained:
            made = "made" if self.evaluations == 1 else "all made"
            return f"{text}, {made} before its first gradient update"
        if self.left_out:
            return text + f"; {self.left_out} before its first gradient update left out"
        return text


def trial_score(values: Sequence[tuple[int, float]], untrained: set[int], last: int) -> TrialScore | None:
    """The mean of the last ``last`` values logged after the first gradient update (an untrained policy's
    return says nothing of the trial's values); of the last ones before it when there is no other. None when
    there is no value at all.

    Args:
        values: ``(step, value)`` of the objective, in order (:class:`ObjectiveReader`).
        untrained: the steps whose values were logged before the first gradient update.
        last: how many values the score averages at most.
    """
    trained = [(step, value) for step, value in values if step not in untrained]
    counted = trained or list(values)
    mean = score(counted, last)
    if mean is None:
        return None
    return TrialScore(
        value=mean,
        evaluations=min(last, len(counted)),
        left_out=sum(1 for step, _ in values[-last:] if step in untrained) if trained else 0,
        untrained=not trained,
    )


def objective_label(objective: str) -> str:
    """What a progress line calls the objective: ``val return`` for the default, else the metric's key."""
    section, _, key = objective.partition("/")
    return f"{section} return" if key == DEFAULT_OBJECTIVE.partition("/")[2] else objective


def score_rule(spec: SweepSpec) -> str:
    """What a trial's score is, in words (what `amago sweep show` says above its numbers)."""
    return (
        f"{objective_label(spec.objective)}, mean of a trial's last {spec.last} evaluations after its first "
        "gradient update (of the ones before it when there is no other)"
    )


@dataclass
class RunningTrial:
    """A trial whose process runs."""

    trial: Any
    process: subprocess.Popen[bytes]
    run_dir: Path
    log: Path
    reader: ObjectiveReader
    reported: set[int] = field(default_factory=set)
    pruned: bool = False


@dataclass
class SweepSettings:
    """What a sweep runs, as its record keeps it (see :data:`SWEEP_RECORD_NAME`).

    Attributes:
        spec: the search space and objective.
        study: the Optuna study's name.
        steps: ``--steps`` each trial is sized to, or None for the config's own schedule.
        trials: the study's trial count: no worker starts a trial once the study has this many.
        parallel: trials this driver runs at a time.
    """

    spec: SweepSpec
    study: str
    steps: str | None
    trials: int
    parallel: int


class SweepDriver:
    """Runs a sweep's trials from this process until the study has its trial count (or it is stopped)."""

    def __init__(
        self,
        folder: SweepFolder,
        settings: SweepSettings,
        study: Any,
        *,
        connect: Sequence[str] = (),
        allow_traj_pickles: bool = False,
        poll_seconds: float = 0.5,
    ) -> None:
        self.folder = folder
        self.settings = settings
        self.study = study
        self.connect = list(connect)
        self.allow_traj_pickles = allow_traj_pickles
        self.poll_seconds = poll_seconds
        self.optuna = optuna_module()
        self.distributions = distributions(settings.spec)
        self.running: dict[int, RunningTrial] = {}
        self.failures_in_a_row = 0
        self.finished_here = 0
        self.failed_here = 0
        self.stopping = False
        self.warned_untrained = False

    # -- the loop ------------------------------------------------------------------------------------------
    def run(self) -> int:
        """Runs trials until the study has its count and none of this driver's runs. Returns the exit code."""
        previous = signal.signal(signal.SIGTERM, self._on_sigterm) if _main_thread() else None
        try:
            while True:
                while not self.stopping and len(self.running) < self.settings.parallel and self._room():
                    self._start(self.study.ask(self.distributions))
                for number in list(self.running):
                    self._follow(number)
                if not self.running and (self.stopping or not self._room()):
                    break
                time.sleep(self.poll_seconds)
        except KeyboardInterrupt:
            self._interrupt()
            sys.stderr.write(
                f"amago: sweep stopped; the running trials saved checkpoints and wait in the study: "
                f"`amago sweep --resume {self.folder.root}` continues them.\n"
            )
            return 130
        except BaseException:
            self._interrupt()  # the driver failed (storage gone, a bug): no trial runs on without it
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
        if self.failures_in_a_row >= FAILURES_IN_A_ROW and not self.finished_here:
            sys.stderr.write(
                f"amago: {self.failures_in_a_row} trials in a row failed and none finished: the base config is "
                f"probably broken (see {self.folder.root / 'logs'}); fix it, then `amago sweep --resume "
                f"{self.folder.root}` goes on.\n"
            )
            return 1
        if self.failed_here and not self.finished_here:  # nothing this sweep ran has a score
            sys.stderr.write(
                f"amago: every trial this sweep ran failed ({self.failed_here} of {self.failed_here}; the lines "
                f"above say why, the logs are in {self.folder.root / 'logs'}); fix the cause, then `amago sweep "
                f"--resume {self.folder.root}` goes on.\n"
            )
            return 1
        return 0

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # a scheduler stopping the driver stops its trials the clean way too

    def _room(self) -> bool:
        """Whether the study may start (or resume) another trial: a trial waits in it, or it has fewer than
        the trial count. Workers sharing the study read the same count; two that ask at the same moment may
        start one trial more than the count."""
        if self.failures_in_a_row >= FAILURES_IN_A_ROW and not self.finished_here:
            return False
        trials = self.study.get_trials(deepcopy=False)
        waiting = self.optuna.trial.TrialState.WAITING
        return any(t.state == waiting for t in trials) or len(trials) < self.settings.trials

    # -- starting a trial ------------------------------------------------------------------------------------
    def _start(self, trial: Any) -> None:
        """Starts (or continues) ``trial``; one whose folder is unsafe goes back to waiting and stops the driver.

        Raises:
            UnsafePathError: the trial's folder, config or log is a link, or a file stands for its folder.
        """
        try:
            self._launch(trial)
        except UnsafePathError:
            self._back_to_waiting(trial)  # it waits in the study for a --resume once the folder is fixed
            raise

    def _launch(self, trial: Any) -> None:
        number = trial.number
        run_dir = self.folder.member(number)  # never a path from the study: anyone may have written it there
        worker = {"host": socket.gethostname(), "pid": os.getpid(), "folder": str(self.folder.root.resolve())}
        trial.set_user_attr("worker", worker)
        if (run_dir / RUN_RECORD_NAME).is_file():  # interrupted earlier: continue from its checkpoint
            command = child_run_command(
                resume=run_dir, overrides=self.connect, allow_traj_pickles=self.allow_traj_pickles
            )
            what = "resumes"
        else:
            try:
                config_file = self._write_trial_config(number, trial.params)
            except TrialConfigError as exc:
                self._fail(trial, f"its config is invalid: {exc}")
                return
            command = child_run_command(
                config=config_file,
                name=run_dir.name,
                base_dir=self.folder.root,
                overrides=self.connect,
                allow_traj_pickles=self.allow_traj_pickles,
            )
            what = "starts"
        trial.set_user_attr("run_dir", str(run_dir))  # for readers of the study; amago never reads it back
        # The log is appended through no link (a planted one would send the output to someone else's file).
        process = start_child(command, self.folder.log(number), root=self.folder.root)
        sys.stderr.write(f"amago: trial {number} {what} ({_params_text(trial.params)})\n")
        reader = ObjectiveReader(run_dir / "metrics.jsonl", self.settings.spec.objective)
        reported = self._reported_steps(number)
        log = self.folder.log(number)
        self.running[number] = RunningTrial(trial, process, run_dir, log, reader, reported)

    def _reported_steps(self, number: int) -> set[int]:
        """The steps a trial reported already (one continued after an interrupt reported its first ones)."""
        for frozen in self.study.get_trials(deepcopy=False):
            if frozen.number == number:
                return set(frozen.intermediate_values)
        return set()

    def _write_trial_config(self, number: int, params: Mapping[str, Any]) -> Path:
        """Resolves and sizes trial ``number``'s config and writes it as a run record. Raises TrialConfigError."""
        config = trial_config(self.folder, self.settings, params)
        path = self.folder.trial_config(number)
        atomic_write_json(path, config, root=self.folder.root)
        return path

    # -- following a trial ------------------------------------------------------------------------------------
    def _follow(self, number: int) -> None:
        running = self.running[number]
        values = running.reader.read()
        for step, value in values:
            if step in running.reported:
                continue
            running.trial.report(value, step)
            running.reported.add(step)
            if not running.pruned and running.process.poll() is None and running.trial.should_prune():
                running.pruned = True
                running.process.send_signal(signal.SIGTERM)  # it saves a checkpoint and exits
                label = objective_label(self.settings.spec.objective)
                sys.stderr.write(
                    f"amago: trial {number} pruned at epoch {step} ({label} {value:.4g} there, below the other "
                    "trials')\n"
                )
        code = running.process.poll()
        if code is None:
            return
        del self.running[number]
        trial = running.trial
        if running.pruned:
            self.study.tell(trial, state=self.optuna.trial.TrialState.PRUNED)
            self.finished_here += 1
            self.failures_in_a_row = 0
            return
        if code != 0:
            self._fail(trial, f"its run exited {code}: {last_line(running.log)} (log: {running.log})")
            return
        objective = self.settings.spec.objective
        final = trial_score(values, running.reader.untrained, self.settings.spec.last)
        if final is None:
            self._fail(
                trial,
                f"its run logged no {objective!r} (check the objective's name against "
                f"{running.run_dir / 'metrics.jsonl'})",
            )
            return
        self.study.tell(trial, final.value)
        self.finished_here += 1
        self.failures_in_a_row = 0
        sys.stderr.write(
            f"amago: trial {number} finished: score {final.value:.4g} ({final.describe(objective)}"
            f"{self._best_note()})\n"
        )
        if final.untrained and not self.warned_untrained:
            self.warned_untrained = True
            sys.stderr.write(
                f"amago: note: trial {number}'s {objective!r} was only logged before its first gradient update, "
                "so its score says little: lower schedule.val_interval (or train longer) so that trials are "
                "evaluated while they learn.\n"
            )

    def _fail(self, trial: Any, why: str) -> None:
        trial.set_user_attr("error", why)
        self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        self.failures_in_a_row += 1
        self.failed_here += 1
        sys.stderr.write(f"amago: trial {trial.number} failed: {why}\n")

    def _best_note(self) -> str:
        """``; best so far: trial 2, score 0.51`` (the study's best, every worker's trials), or nothing."""
        try:
            best = self.study.best_trial
        except ValueError:
            return ""
        return f"; best so far: trial {best.number}, score {best.value:.4g}"

    def _back_to_waiting(self, trial: Any) -> None:
        """Puts ``trial`` back in the study as waiting, for a later driver to continue."""
        try:  # the public Trial API cannot move a trial back to waiting; the storage's can
            self.study._storage.set_trial_state_values(trial._trial_id, self.optuna.trial.TrialState.WAITING)
        except Exception as exc:  # the storage is gone: --resume on this machine reclaims it
            sys.stderr.write(f"amago: trial {trial.number} could not be put back as waiting: {exc}\n")

    def _interrupt(self) -> None:
        """Stops every running trial the clean way and puts it back in the study as waiting."""
        self.stopping = True
        for running in self.running.values():
            if running.process.poll() is None:
                running.process.send_signal(signal.SIGTERM)
        for running in self.running.values():
            running.process.wait()
        for number, running in list(self.running.items()):
            del self.running[number]
            self._back_to_waiting(running.trial)


class TrialConfigError(ValueError):
    """A trial's combination of values does not make a valid config; the message says which setting."""


def trial_config(folder: SweepFolder, settings: SweepSettings, params: Mapping[str, Any]) -> dict[str, Any]:
    """The resolved, sized config of a trial with ``params``, as the run record its process reads.

    Raises:
        TrialConfigError: the values make no valid config (the message names the setting).
    """
    import typer
    from pydantic import ValidationError

    from amago_core.cli.run_cmd import default_job
    from amago_core.config.errors import describe_validation_error
    from amago_core.config.resolve import plan_run
    from amago_core.config.sources import PROVENANCE_KEY, ConfigSourceError, is_set
    from amago_core.plugins.errors import PluginError
    from amago_tools.sizing.run_options import size_run

    check_sources_file(folder)
    try:
        plan = plan_run([folder.config], {}, param_overrides(params), default_job=default_job())
        if settings.steps is not None:
            plan = size_run(plan, budget=None, steps=settings.steps, smoke=False, announce=False, debug=False)
    except ValidationError as exc:
        raise TrialConfigError("; ".join(describe_validation_error(exc))) from None
    except (ConfigSourceError, PluginError) as exc:
        raise TrialConfigError(str(exc)) from None
    except typer.Exit:  # sizing refused the schedule; its line is already on stderr
        raise TrialConfigError(f"--steps {settings.steps} cannot size it (the line above says why)") from None
    config = plan.config.model_dump(mode="json")
    config["run"]["name"] = None  # the trial's process names its folder (trial_<n>)
    config["run"]["ckpt_base_dir"] = str(folder.root)
    if not is_set(plan.own, "run", "torch_threads"):
        config["run"]["torch_threads"] = 1  # trials side by side on a CPU: one thread each
    if config["logging"]["log_to_wandb"] and not config["logging"]["wandb_group_name"]:
        config["logging"]["wandb_group_name"] = folder.root.name  # every trial's wandb run in one group
    return {**config, PROVENANCE_KEY: {"written_by": "amago sweep", "params": dict(params)}}


def check_sources_file(folder: SweepFolder) -> None:
    """Exits 2 when the sweep's config file sets what a folder never chooses (someone edited it): where runs
    write, what they connect to. The command passes those."""
    from amago_core.config.sources import folder_owned_settings, read_raw_config_file

    owned = folder_owned_settings(read_raw_config_file(folder.config))
    if owned:
        fail(
            f"{folder.config} sets {', '.join(sorted(owned))}: a sweep folder never chooses where its trials write "
            "or what they connect to; remove them from the file and pass them with -o on the command"
        )


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={_short(value)}" for key, value in params.items())


def _short(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _main_thread() -> bool:
    """Signal handlers can only be set from the main thread (a test runner's worker thread cannot)."""
    return threading.current_thread() is threading.main_thread()
