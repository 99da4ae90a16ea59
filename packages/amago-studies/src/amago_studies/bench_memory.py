"""`amago bench memory`: trajectory encoders (memories) trained on a set of tasks, N seeds each, at one env-step
budget, and compared on one table (:mod:`amago_studies.bench_memory_report`).

A bench folder ``OUT`` holds

- ``bench.json`` (:data:`BENCH_RECORD`): the settings that decide the runs (memories, tasks, seeds, ``--steps``,
  the ``-c`` files' contents as sha256 digests, the ``-o`` items), each run's exit code, peak RSS and wall time,
  each session's date and load, and the last report's results. A later command on the folder must give the same
  settings (it resumes), except that it may add memories or tasks (the bench grows: only the new pairs train);
  the report's own options (``--baseline``, ``--best``, ``--last``, ``--reps``) may change;
- ``floors.json``: each task's random-policy return, measured here through the suite's env maker and cached by
  the task's env config;
- ``<task>/<memory>/``: a seed group as ``amago run --seeds`` makes it (:mod:`amago_studies.seeds`: its record,
  its config, ``logs/seed_<k>.log``, ``seed_<k>/``), so ``amago run --resume`` and ``amago compare`` read it too;
- ``bench.md`` and ``bench.png``: the report.

Each group's config is resolved and sized (``--steps``) once, here, as ``amago run --seeds`` does, and each seed
is a child ``amago run`` of that config (:func:`amago_studies.seeds.seed_command`), ``--parallel`` at a time: a
seed that fails is one line and the others go on. A bench folder is data like a seed group: the driver holds the
folder's lock and each group's, every member must be a real folder of its parent (:func:`amago_core.io.
member_folder`), and every file goes through the path gate. torch is never imported here.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amago_core.io import atomic_write_json, inside, member_folder
from amago_studies.child_runs import last_line, open_log, start_child
from amago_studies.seeds import GROUP_CONFIG_NAME, SeedGroup, held, seed_command

BENCH_RECORD = "bench.json"
FLOORS_FILE = "floors.json"
REPORT_FILES = ("bench.md", "bench.png")
RECORD_KIND = "amago bench memory"
LOCK_ROLE = "memory bench"
SESSIONS_KEPT = 50
_UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9._-]")


class BenchError(ValueError):
    """A bench that cannot start or resume as asked; the message (one line) says what to do instead."""


class PairError(ValueError):
    """One (task, memory) pair whose config cannot be resolved; the others go on."""


def task_folder(task: str) -> str:
    """The folder name of a task's groups: the env id with any character outside ``A-Za-z0-9._-`` as ``_`` (a
    gym id such as ``ALE/Pong-v5`` would otherwise name a subfolder)."""
    name = _UNSAFE_IN_NAME.sub("_", task.strip())
    return name if name.strip(".") else f"_{name}"


@dataclass(frozen=True)
class Settings:
    """What decides a bench's runs: two commands on one folder must agree on each."""

    memories: tuple[str, ...]
    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    steps: int
    configs: tuple[Path, ...] = ()
    digests: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    memory_options: tuple[tuple[str, str], ...] = ()
    """``--memory-option`` items as (memory, ``section.key=value``), in order: ``-o`` items of one memory's runs."""

    def overrides_of(self, memory: str) -> tuple[str, ...]:
        """The ``-o`` items of ``memory``'s runs: every memory's, then its own (a later item wins)."""
        return (*self.overrides, *(item for name, item in self.memory_options if name == memory))

    def record(self) -> dict[str, Any]:
        return {
            "memories": list(self.memories),
            "tasks": list(self.tasks),
            "seeds": list(self.seeds),
            "steps": self.steps,
            "configs": [
                {"path": str(p), "sha256": d} for p, d in zip(self.configs, self.digests, strict=True)
            ],
            "overrides": list(self.overrides),
            "memory_options": [f"{name}:{item}" for name, item in self.memory_options],
        }

    def difference(self, recorded: Any) -> str | None:
        """The first setting in which ``recorded`` (a record's ``settings``) differs, as ``--flag theirs, not
        mine``; None when they agree. A bench grows: ``recorded``'s memories and tasks need only be among mine (the
        new pairs are runs of their own, and nothing trained changes), and a ``--memory-option`` of a new memory is
        its own. Seeds compare as sets (each pair's seed group holds them), memories and tasks too (their order
        only orders the table); ``-o`` items in order (a later one wins)."""
        mine = self.record()
        theirs = recorded if isinstance(recorded, dict) else {}
        for key, flag in (("memories", "--memories"), ("tasks", "--tasks"), ("seeds", "--seeds")):
            old = theirs.get(key)
            kept = set(map(str, mine[key]))
            if (
                not isinstance(old, list)
                or (key == "seeds" and set(map(str, old)) != kept)
                or not set(map(str, old)) <= kept
            ):
                shown = ",".join(map(str, old)) if isinstance(old, list) else "?"
                return f"{flag} {shown}, not {flag} {','.join(map(str, mine[key]))}"
        if theirs.get("steps") != self.steps:
            return f"--steps {theirs.get('steps')}, not --steps {self.steps}"
        old_configs = theirs.get("configs")
        old_digests = (
            [c.get("sha256") for c in old_configs if isinstance(c, dict)]
            if isinstance(old_configs, list)
            else None
        )
        if old_digests != list(self.digests):
            return "other -c files (or files edited since: bench.json keeps each one's sha256)"
        if theirs.get("overrides") != list(self.overrides):
            old = theirs.get("overrides")
            shown = " ".join(f"-o {item}" for item in old) if isinstance(old, list) else "?"
            return f"{shown or 'no -o'}, not {' '.join(f'-o {item}' for item in self.overrides) or 'no -o'}"
        old_options = theirs.get("memory_options", [])  # benches from before --memory-option have none
        had = set(map(str, theirs["memories"]))
        # A memory the bench did not have brings its own options; those of the ones it had must agree.
        of_theirs = [item for item in mine["memory_options"] if item.partition(":")[0] in had]
        if old_options != of_theirs:
            shown = (
                " ".join(f"--memory-option {item}" for item in old_options)
                if isinstance(old_options, list)
                else "?"
            )
            given = " ".join(f"--memory-option {item}" for item in of_theirs)
            return f"{shown or 'no --memory-option'}, not {given or 'no --memory-option'}"
        return None


def read_record(out: Path) -> dict[str, Any] | None:
    """``OUT/bench.json``, checked to be a bench record; None when there is none.

    Raises:
        BenchError: it cannot be read, is not JSON, or is no bench record.
    """
    path = out / BENCH_RECORD
    if not os.path.lexists(path):
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        reason = type(exc).__name__ if isinstance(exc, RecursionError) else " ".join(str(exc).split())
        raise BenchError(
            f"{path} cannot be read as a memory bench record ({reason}): restore it, or give a new OUT"
        ) from None
    if (
        not isinstance(data, dict)
        or data.get("kind") != RECORD_KIND
        or not isinstance(data.get("settings"), dict)
    ):
        raise BenchError(f"{path} is not a record `amago bench memory` writes: give a new OUT")
    runs = data.get("runs")
    data["runs"] = (
        {key: value for key, value in runs.items() if isinstance(value, dict)}
        if isinstance(runs, dict)
        else {}
    )
    return data


def check_out(out: Path, settings: Settings) -> dict[str, Any] | None:
    """The folder's record when ``OUT`` is a bench of these settings, None when it is new (missing or empty).

    Raises:
        BenchError: ``OUT`` is a file, holds something that is not a bench, or is a bench of other settings (the
            line names the first setting that differs and what to do).
    """
    from amago_core.experiment.run_lock import LOCK_FILE

    if os.path.lexists(out) and not out.is_dir():
        raise BenchError(f"{out} is a file: OUT must be a folder (a new one, or a bench folder to resume)")
    if not out.exists():
        return None
    record = read_record(out)
    if record is None:
        others = sorted(name for name in os.listdir(out) if name != LOCK_FILE)
        if others:
            raise BenchError(
                f"{out} holds other files ({others[0]}...) and no {BENCH_RECORD}: a bench writes only into a new or "
                "empty folder, or one it made; give another OUT"
            )
        return None
    differs = settings.difference(record["settings"])
    if differs is not None:
        raise BenchError(
            f"{out} is a bench of {differs}: rerun with its settings to resume it (see its bench.json; more "
            "memories or tasks may be added), or give a new OUT for these"
        )
    return record


@dataclass
class Group:
    """One (task, memory) pair: a seed group, its resolved config and what each child connects to."""

    task: str
    memory: str
    seeds: SeedGroup
    config: dict[str, Any] | None = None
    connect: list[str] = field(default_factory=list)
    schedule: str = ""
    problem: str | None = None
    """Why its config cannot be resolved (its seeds cannot start); None when it can."""
    best_known: float | None = None
    """The task's best known return as its env suite declares it (``EnvSuiteConfig.best_known_return``)."""

    @property
    def label(self) -> str:
        return f"{self.memory} on {self.task}"


def resolve_group(
    task: str, memory: str, settings: Settings, root: Path
) -> tuple[dict[str, Any], list[str], str, float | None]:
    """The group config of ``memory`` on ``task`` (sized to ``--steps``, as ``amago run --seeds`` writes it),
    the ``-o`` items that give each child what it connects to, the sized schedule in words, and the task's best
    known return as its env suite declares it (None: unknown).

    Raises:
        PairError: the sources make no valid config for this pair (the message names the setting).
    """
    import typer
    from pydantic import ValidationError

    from amago_core.cli.run_cmd import cli_flags, default_job
    from amago_core.config.component import EnvSuiteConfig
    from amago_core.config.errors import describe_validation_error
    from amago_core.config.resolve import plan_run
    from amago_core.config.sizing import describe_schedule
    from amago_core.config.sources import PROVENANCE_KEY, ConfigSourceError, is_set
    from amago_core.plugins.errors import PluginError
    from amago_studies.child_runs import connect_overrides
    from amago_tools.sizing.run_options import size_run

    flags = cli_flags(env=task, traj_encoder=memory.partition("@")[0])  # gru@wide is a gru
    try:
        plan = plan_run(settings.configs, flags, settings.overrides_of(memory), default_job=default_job())
        plan = size_run(
            plan, budget=None, steps=str(settings.steps), smoke=False, announce=False, debug=False
        )
    except ValidationError as exc:
        raise PairError("; ".join(describe_validation_error(exc))) from None
    except (ConfigSourceError, PluginError, ValueError) as exc:
        raise PairError(" ".join(str(exc).split())) from None
    except typer.Exit:  # sizing refused the schedule; its line is already on stderr
        raise PairError(f"--steps {settings.steps} cannot size it (the line above says why)") from None
    config = plan.config.model_dump(mode="json")
    connect = connect_overrides(config)
    config["run"].update(name=None, seed=None, ckpt_base_dir=str(root))  # each child: its folder and --seed
    if not is_set(plan.own, "run", "torch_threads"):
        config["run"]["torch_threads"] = 1  # children side by side on a CPU: one thread each
    if config["logging"]["log_to_wandb"] and not config["logging"]["wandb_group_name"]:
        config["logging"]["wandb_group_name"] = f"{root.parent.parent.name}-{task}-{memory}"
    env = plan.config.env
    known = env.best_known_return() if isinstance(env, EnvSuiteConfig) else None
    group_config = {**config, PROVENANCE_KEY: {"written_by": RECORD_KIND}}
    return group_config, connect, describe_schedule(plan.config), known


def plan_groups(out: Path, settings: Settings) -> list[Group]:
    """Every (task, memory) group of the bench, task-major, each resolved (or with the reason it cannot be)."""
    groups = []
    for task in settings.tasks:
        for memory in settings.memories:
            group = Group(task, memory, SeedGroup(out / task_folder(task) / memory))
            try:
                group.config, group.connect, group.schedule, group.best_known = resolve_group(
                    task, memory, settings, group.seeds.root
                )
            except PairError as exc:
                group.problem = str(exc)
            groups.append(group)
    return groups


def recorded_codes(group: SeedGroup, seeds: Sequence[int]) -> dict[str, int]:
    """The exit codes a group's record holds (none for a group not started yet).

    Raises:
        amago_studies.seeds.GroupError: the record is broken.
        BenchError: it lists other seeds than the bench.
    """
    if not group.record.is_file():
        return {}
    record = group.read_record()
    if sorted(record["seeds"]) != sorted(seeds):
        raise BenchError(
            f"{group.record} lists seeds {record['seeds']}, the bench {list(seeds)}: it is no group of this bench; "
            "move it away, or give a new OUT"
        )
    return dict(record["exit_codes"])


def seed_state(group: SeedGroup, seed: int, codes: Mapping[str, int]) -> str:
    """``finished`` (exited 0), ``resume`` (a run folder with its record) or ``start``."""
    from amago_core.config.sources import RUN_RECORD_NAME

    if codes.get(str(seed)) == 0:
        return "finished"
    return "resume" if (group.run_dir(seed) / RUN_RECORD_NAME).is_file() else "start"


@dataclass(eq=False)  # hashed by identity: the scheduler keys its running processes by child
class Child:
    """One seed to run: its group, seed, command and whether it resumes."""

    group: Group
    seed: int
    command: list[str]
    resume: bool

    @property
    def key(self) -> str:
        return f"{task_folder(self.group.task)}/{self.group.memory}/seed_{self.seed}"

    @property
    def label(self) -> str:
        return f"{self.group.memory} on {self.group.task} seed {self.seed}"


def children(
    groups: Sequence[Group], seeds: Sequence[int], codes: Mapping[str, Mapping[str, int]]
) -> list[Child]:
    """The seeds that have not finished, seed-major (every group's seed 0 first, so that a stopped bench has
    covered every pair), each a fresh start of its group's config or a resume of its folder."""
    found = []
    for seed in seeds:
        for group in groups:
            if group.problem is not None:
                continue
            state = seed_state(group.seeds, seed, codes.get(group.label, {}))
            if state == "finished":
                continue
            command = seed_command(group.seeds, seed, resume=state == "resume", overrides=group.connect)
            found.append(Child(group, seed, command, resume=state == "resume"))
    return found


def check_members(out: Path, groups: Sequence[Group], seeds: Sequence[int]) -> None:
    """Checks, before anything is written, that every folder and file the bench writes stays in ``OUT`` through
    no link: the bench's own files, each task and memory folder (real folders, not links or files), each seed's
    folder, log, the group record and config; then that each started group's record is one of this bench.

    Raises:
        amago_core.io.UnsafePathError: one line naming the first link or file in the way.
        amago_studies.seeds.GroupError: a group record is broken.
        BenchError: a group record lists other seeds.
    """
    from amago_core.experiment.run_lock import LOCK_FILE

    for name in (BENCH_RECORD, FLOORS_FILE, *REPORT_FILES, LOCK_FILE):
        inside(out, out / name)
    for group in groups:
        task_dir = member_folder(out, task_folder(group.task))
        member_folder(task_dir, group.memory)
        root = group.seeds.root
        for path in (root / LOCK_FILE, group.seeds.record, group.seeds.config, group.seeds.summary):
            inside(root, path)
        for seed in seeds:
            group.seeds.member(seed)
            inside(root, group.seeds.log(seed))
    for group in groups:
        if group.problem is None:
            recorded_codes(group.seeds, seeds)


def write_group(group: Group, seeds: Sequence[int], command: Sequence[str], parallel: int) -> None:
    """Writes a new group's config and record (a started group keeps its own: its seeds run one config)."""
    root = group.seeds.root
    if not group.seeds.config.is_file() and group.config is not None:
        atomic_write_json(group.seeds.config, group.config, root=root)
    if not group.seeds.record.is_file():
        group.seeds.write_record(
            {
                "seeds": list(seeds),
                "command": list(command),
                "parallel": parallel,
                "config": GROUP_CONFIG_NAME,
                "exit_codes": {},
            }
        )


def load_average() -> float | None:
    """The 1-minute load average (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _reap(process: subprocess.Popen[bytes], *, block: bool) -> tuple[int, int | None] | None:
    """``(exit code, peak RSS in bytes)`` of a child that ended, reaped with ``wait4`` so that its resource use
    is read; None while it runs. The RSS is ``ru_maxrss``: the largest resident set of the child or of any process
    it started and waited for (not their sum)."""
    if not hasattr(os, "wait4"):
        code = process.wait() if block else process.poll()
        return None if code is None else (code, None)
    pid, status, usage = os.wait4(process.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return None
    process.returncode = os.waitstatus_to_exitcode(status)
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return process.returncode, int(usage.ru_maxrss) * scale


@dataclass(frozen=True)
class Ended:
    """How a child ended: its exit code, peak RSS (bytes; None where unknown), wall seconds, and why, when it
    did not run to its end on its own (``stopped``, ``could not start: ...``)."""

    code: int
    peak_rss: int | None
    seconds: float
    why: str | None = None


@contextmanager
def _sigterm_stops(running: Mapping[Child, subprocess.Popen[bytes]]) -> Iterator[None]:
    """A scheduler that stops the driver stops the children too, each the clean way (a checkpoint, then exit)."""

    def forward(signum: int, frame: Any) -> None:
        for process in running.values():
            process.send_signal(signal.SIGTERM)
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()  # handlers: main thread only
    previous = signal.signal(signal.SIGTERM, forward) if main else None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def run_children(
    todo: Sequence[Child],
    parallel: int,
    on_exit: Callable[[Child, Ended], None],
    poll_seconds: float = 0.2,
) -> None:
    """Runs each child, ``parallel`` at a time, its output appended to its group's ``logs/seed_<k>.log``.

    A child that fails, or whose log the path gate refuses, does not stop the others: ``on_exit(child, ended)``
    runs in this process as each ends. On Ctrl-C (which the children got from the terminal too) or SIGTERM
    (forwarded) the running ones are waited for, so each saves its checkpoint, and KeyboardInterrupt is raised
    again; on any other error they are stopped the clean way before it is raised.
    """
    pending = list(todo)
    running: dict[Child, subprocess.Popen[bytes]] = {}
    started: dict[Child, float] = {}

    def ended(child: Child, reaped: tuple[int, int | None], why: str | None = None) -> None:
        del running[child]
        on_exit(child, Ended(reaped[0], reaped[1], time.monotonic() - started[child], why))

    with _sigterm_stops(running):
        try:
            while pending or running:
                while pending and len(running) < parallel:
                    child = pending.pop(0)
                    started[child] = time.monotonic()
                    try:
                        running[child] = start_child(
                            child.command, child.group.seeds.log(child.seed), root=child.group.seeds.root
                        )
                    except OSError as exc:  # the path gate refused its log: the others go on
                        on_exit(child, Ended(1, None, 0.0, f"could not start: {exc}"))
                for child, process in list(running.items()):
                    reaped = _reap(process, block=False)
                    if reaped is not None:
                        ended(child, reaped)
                if running:
                    time.sleep(poll_seconds)
        except KeyboardInterrupt:
            for child, process in list(running.items()):
                ended(child, _reap(process, block=True) or (1, None), "stopped")
            raise
        except BaseException:
            for process in running.values():
                process.send_signal(signal.SIGTERM)
            for process in running.values():
                process.wait()
            raise


def failure_line(child: Child, code: int) -> str:
    """``amago: bench: ffm on popgym-autoencode-easy seed 2 failed: <its last line>; its log: <path>``."""
    log = child.group.seeds.log(child.seed)
    why = last_line(log).removeprefix("amago: error: ")
    return f"amago: bench: {child.label} failed (exit {code}): {why}; its log: {log}\n"


@dataclass
class Session:
    """One command's pass over a bench folder: what it started and how it ended."""

    record: dict[str, Any]
    interrupted: bool = False


def run_bench(
    out: Path,
    settings: Settings,
    groups: Sequence[Group],
    record: dict[str, Any] | None,
    *,
    parallel: int,
    command: Sequence[str],
    report: Callable[[dict[str, Any]], None],
    train: bool = True,
) -> Session:
    """Runs what has not finished and reports, holding the folder's lock and every group's (with ``train``
    False: reports on the runs that have finished and starts none, holding the folder's lock).

    Raises:
        amago_core.experiment.run_lock.RunInUseError: another process drives the bench or one of its groups.
        amago_core.io.UnsafePathError: a member or file of the bench is a link (checked before anything is
            written, and again at each write).
        BenchError: nothing to report on (``train`` False and no record).
    """
    from amago_core.experiment import run_lock

    if record is None and not train:
        raise BenchError(f"{out} holds no bench to report on: start it without --report-only")
    check_members(out, groups, settings.seeds)
    out.mkdir(parents=True, exist_ok=True)
    lock = run_lock.acquire(out, LOCK_ROLE)
    try:
        if record is not None and not train:  # (None was refused above)
            return _report_only(out, record, report)
        with ExitStack() as stack:
            return _run_locked(out, settings, groups, record, stack, parallel, command, report)
    finally:
        if lock is not None:
            lock.release()


def _report_only(out: Path, record: dict[str, Any], report: Callable[[dict[str, Any]], None]) -> Session:
    """Reports on the runs that have finished and writes the record; the settings, command and training
    sessions it holds stay as the training commands wrote them."""
    report(record)
    atomic_write_json(out / BENCH_RECORD, record, root=out)
    return Session(record)


def _run_locked(
    out: Path,
    settings: Settings,
    groups: Sequence[Group],
    previous: dict[str, Any] | None,
    stack: ExitStack,
    parallel: int,
    command: Sequence[str],
    report: Callable[[dict[str, Any]], None],
) -> Session:
    record: dict[str, Any] = previous or {"kind": RECORD_KIND, "format": 1, "runs": {}, "sessions": []}
    record.update(settings=settings.record(), command=list(command))
    sessions = record["sessions"] if isinstance(record.get("sessions"), list) else []
    session_info: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_start": load_average(),
        "trained": 0,
    }
    record["sessions"] = [*sessions[-(SESSIONS_KEPT - 1) :], session_info]
    atomic_write_json(out / BENCH_RECORD, record, root=out)
    session = Session(record)
    codes: dict[str, dict[str, int]] = {}
    for group in groups:
        if group.problem is not None:
            sys.stderr.write(f"amago: bench: {group.label} cannot start: {group.problem}\n")
            continue
        member_folder(out, task_folder(group.task))  # again, right before the folders are made
        stack.enter_context(held(group.seeds))
        codes[group.label] = recorded_codes(group.seeds, settings.seeds)
        write_group(group, settings.seeds, command, parallel)
    todo = children(groups, settings.seeds, codes)
    for child in todo:
        open_log(
            child.group.seeds.log(child.seed), child.group.seeds.root
        ).close()  # a linked log: refused now
    planned = len(settings.seeds) * sum(group.problem is None for group in groups)
    resumed = sum(child.resume for child in todo)
    sys.stderr.write(
        f"amago: bench: {len(todo) - resumed} run(s) to start, {resumed} to resume, {planned - len(todo)} finished "
        f"already; {parallel} at a time\n"
    )
    done = planned - len(todo)

    def on_exit(child: Child, ended: Ended) -> None:
        nonlocal done
        code = ended.code
        entry = record["runs"].setdefault(child.key, {})
        old_rss = entry.get("peak_rss_bytes")
        peaks = [value for value in (old_rss, ended.peak_rss) if isinstance(value, int)]
        old_seconds, tries = entry.get("seconds"), entry.get("tries")
        entry.update(
            exit_code=code,
            peak_rss_bytes=max(peaks) if peaks else None,  # a resumed run's peak: the larger session's
            seconds=round((old_seconds if isinstance(old_seconds, int | float) else 0.0) + ended.seconds, 2),
            tries=tries + 1 if isinstance(tries, int) else 1,
        )
        codes[child.group.label][str(child.seed)] = code
        group_record = child.group.seeds.read_record()
        group_record["exit_codes"][str(child.seed)] = code
        child.group.seeds.write_record(group_record)
        session_info["trained"] += 1
        atomic_write_json(out / BENCH_RECORD, record, root=out)
        if code == 0:
            done += 1
            sys.stderr.write(f"amago: bench: {child.label} finished ({done}/{planned})\n")
        elif ended.why == "stopped":
            sys.stderr.write(
                f"amago: bench: {child.label} stopped (exit {code}); the same command resumes it\n"
            )
        elif ended.why is not None:
            sys.stderr.write(f"amago: bench: {child.label} {ended.why}\n")
        else:
            sys.stderr.write(failure_line(child, code))

    try:
        run_children(todo, parallel, on_exit)
    except KeyboardInterrupt:
        session.interrupted = True
    session_info.update(ended=time.strftime("%Y-%m-%d %H:%M:%S %Z"), load_end=load_average())
    atomic_write_json(out / BENCH_RECORD, record, root=out)
    if not session.interrupted:
        report(record)
        atomic_write_json(out / BENCH_RECORD, record, root=out)
    return session
