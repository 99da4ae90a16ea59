"""`amago run --seeds`: one resolved config trained under several seeds, one process per seed.

A seed group is a folder ``{run.ckpt_base_dir}/{name}/`` holding a run folder per seed (``seed_<k>/``), each
seed's stdout and stderr (``logs/seed_<k>.log``), the config every seed runs (:data:`GROUP_CONFIG_NAME`) and the
group record (:data:`GROUP_RECORD_NAME`: the seeds, the command, each finished seed's exit code).
``amago run --resume GROUP`` reads the record and finishes the seeds that did not exit 0.

A group folder is data, as a run folder is: it may come from anyone. So the process that drives a group holds
its lock (:func:`held`, the run lock of :mod:`amago_core.experiment.run_lock` on the group folder) while it
runs or resumes it; each seed is one of the group's own folders, never a link or a file
(:meth:`SeedGroup.member`); the logs, record and summary are written through the path gate of
:mod:`amago_core.io`; and the record's seeds are whole numbers, so no path in the record or the summary ever
decides where a seed writes.

Each seed is a separate ``python -m amago_core.cli.app run`` process so that a seed that crashes (or runs out of
memory) takes no other seed with it. torch is never imported here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amago_core.io import atomic_write_json, member_folder
from amago_studies import SEED_GROUP_RECORD
from amago_studies.child_runs import child_run_command, connect_overrides, last_line, open_log, start_child

GROUP_RECORD_NAME = SEED_GROUP_RECORD
"""The group record: what ``--resume`` on a group folder reads."""
GROUP_SUMMARY_NAME = "seeds.summary.json"
"""The group's last summary: each seed's exit code and final return, and their mean."""
GROUP_CONFIG_NAME = "seeds.config.json"
"""The resolved config every seed runs, written as a run record (with a ``_provenance`` table): a group folder
may come from anyone, so where a seed writes and what it connects to (wandb, Ray, the buffer's place) come from
the command that starts or resumes the group, never from this file."""
SEEDS_MAX = 1000
"""More seeds than this in one command is almost surely a typo (``--seeds 10000`` for ``--seeds 10,000``)."""
GROUP_LOCK_ROLE = "seed group"
"""What the group's lock records as its holder's role (a refused second driver names it)."""
START_FAILED = 1
"""The exit code recorded for a seed whose process could not start (its log refused by the path gate), so that
``--resume`` retries it."""
_RETURN_KEY = (
    "Average Total Return (Across All Env Names)"  # amago_core.experiment.metrics.AVERAGE_RETURN_KEY
)


class GroupError(ValueError):
    """A seed group that cannot start or resume as asked; the message (one line) says what to do instead."""


def parse_seeds(text: str, base: int = 0) -> list[int]:
    """The seeds ``--seeds TEXT`` names: a count (``5``: ``base`` .. ``base + 4``) or a list (``1,4,9``).

    Raises:
        ValueError: one line saying what a valid value looks like.
    """
    items = [item.strip() for item in text.split(",")]
    if not all(item.isdigit() for item in items):
        msg = f"--seeds takes a count (5: seeds 0..4) or a comma-separated list of seeds >= 0 (1,4,9), not {text!r}"
        raise ValueError(msg)
    if len(items) == 1:
        count = int(items[0])
        if not 1 <= count <= SEEDS_MAX:
            msg = (
                f"--seeds {count}: the count must be 1 to {SEEDS_MAX} (one seed k alone: --seeds 1 --seed k)"
            )
            raise ValueError(msg)
        return [base + k for k in range(count)]
    seeds = [int(item) for item in items]
    if len(set(seeds)) != len(seeds):
        msg = f"--seeds {text}: a seed is listed twice; list each seed once"
        raise ValueError(msg)
    return seeds


@dataclass(frozen=True)
class SeedGroup:
    """The paths of a seed group folder."""

    root: Path

    def run_dir(self, seed: int) -> Path:
        """The seed's run folder by name (unchecked: to show or read; :meth:`member` before a seed runs)."""
        return self.root / f"seed_{seed}"

    def member(self, seed: int) -> Path:
        """The seed's run folder once checked to be the group's own: not a symlink, not a file.

        Raises:
            amago_core.io.UnsafePathError: one line naming the link or the file.
        """
        return member_folder(self.root, f"seed_{seed}")

    def log(self, seed: int) -> Path:
        return self.root / "logs" / f"seed_{seed}.log"

    @property
    def summary(self) -> Path:
        """Every seed's exit code and final return once the group ends (rewritten by each resume)."""
        return self.root / GROUP_SUMMARY_NAME

    @property
    def record(self) -> Path:
        return self.root / GROUP_RECORD_NAME

    @property
    def config(self) -> Path:
        return self.root / GROUP_CONFIG_NAME

    def read_record(self) -> dict[str, Any]:
        """The group record, checked to hold what ``amago run --seeds`` writes (:func:`checked_record`).

        Raises:
            GroupError: it cannot be read, is not JSON (or nests too deep), or holds something else.
        """
        try:
            data = json.loads(self.record.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            reason = type(exc).__name__ if isinstance(exc, RecursionError) else " ".join(str(exc).split())
            msg = (
                f"{self.record} cannot be read as a seed group record ({reason}): restore it from a copy, or "
                "start a new group with `amago run --seeds`"
            )
            raise GroupError(msg) from None
        return checked_record(data, self.record)

    def write_record(self, record: Mapping[str, Any]) -> None:
        """Writes the record whole and renames it into place (a driver stopped mid-write leaves the previous
        one), through the path gate: never through a link, never outside the group."""
        atomic_write_json(self.record, record, root=self.root)


def checked_record(data: Any, path: Path) -> dict[str, Any]:
    """``data`` once it holds what ``amago run --seeds`` writes: seeds that are distinct whole numbers >= 0 (a
    seed names its folder ``seed_<k>``: no text of the record becomes a path), a ``parallel`` count and exit
    codes of listed seeds.

    Raises:
        GroupError: one line naming what is wrong with the record at ``path``.
    """
    problem = _record_problem(data)
    if problem is not None:
        msg = (
            f"{path} is not a seed group record as `amago run --seeds` writes it ({problem}): restore it from a "
            "copy, or start a new group with `amago run --seeds`"
        )
        raise GroupError(msg)
    return {**data, "parallel": data.get("parallel", 1), "exit_codes": dict(data.get("exit_codes", {}))}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _record_problem(data: Any) -> str | None:
    """What is wrong with a group record, or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    seeds = data.get("seeds")
    if not isinstance(seeds, list) or not 1 <= len(seeds) <= SEEDS_MAX:
        return f"'seeds' must list 1 to {SEEDS_MAX} seeds"
    if not all(_whole(seed) and seed >= 0 for seed in seeds):
        return "every seed must be a whole number >= 0"
    if len(set(seeds)) != len(seeds):
        return "a seed is listed twice"
    parallel = data.get("parallel", 1)
    if not _whole(parallel) or parallel < 1:
        return "'parallel' must be a whole number >= 1"
    codes = data.get("exit_codes", {})
    listed = {str(seed) for seed in seeds}
    if not isinstance(codes, dict) or not all(key in listed and _whole(code) for key, code in codes.items()):
        return "'exit_codes' must map listed seeds to whole-number exit codes"
    return None


@contextmanager
def held(group: SeedGroup) -> Iterator[None]:
    """Holds the group's lock (``.amago.lock`` in the group folder, as a run holds its own) while the group
    starts or resumes, so that two drivers never run the same seeds. Each seed's process locks its own
    ``seed_<k>/`` besides.

    Raises:
        amago_core.experiment.run_lock.RunInUseError: another process drives the group (one line naming its pid,
            host and role).
        amago_core.io.UnsafePathError: the lock file is a link.
    """
    from amago_core.experiment import run_lock

    group.root.mkdir(parents=True, exist_ok=True)
    lock = run_lock.acquire(group.root, GROUP_LOCK_ROLE)
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def is_group(folder: Path) -> bool:
    """Whether ``folder`` is a seed group (it holds the group record)."""
    return (folder / GROUP_RECORD_NAME).is_file()


def seed_command(
    group: SeedGroup,
    seed: int,
    *,
    resume: bool,
    overrides: Sequence[str] = (),
    allow_traj_pickles: bool = False,
) -> list[str]:
    """The ``amago run`` process of one seed: a fresh start from the group config, or ``--resume`` of its folder
    (see :func:`~amago_studies.child_runs.child_run_command`)."""
    if resume:
        return child_run_command(
            resume=group.run_dir(seed), overrides=overrides, allow_traj_pickles=allow_traj_pickles
        )
    return child_run_command(
        config=group.config,
        name=f"seed_{seed}",
        base_dir=group.root,
        seed=seed,
        overrides=overrides,
        allow_traj_pickles=allow_traj_pickles,
    )


def run_seeds(
    commands: Mapping[int, Sequence[str]],
    logs: Mapping[int, Path],
    parallel: int,
    on_exit: Callable[[int, int], None] = lambda seed, code: None,
    poll_seconds: float = 0.2,
    *,
    root: Path | None = None,
) -> dict[int, int]:
    """Runs one process per seed, ``parallel`` at a time, each writing stdout and stderr to its log.

    A seed that fails does not stop the others: its one line (seed, exit code, the log's last line) goes to
    stderr and the next seed starts; so does a seed whose log the path gate refuses (it is not started, and is
    recorded with :data:`START_FAILED`). ``on_exit(seed, code)`` runs in this process as each one ends (the
    driver records it there). On Ctrl-C the running seeds (which got the same Ctrl-C from the terminal) are
    waited for, so that each saves its checkpoint, and KeyboardInterrupt is raised again; on any other error
    here they are stopped the clean way (SIGTERM) and waited for before it is raised.

    Args:
        root: the group folder every log must stay in (see :func:`~amago_studies.child_runs.open_log`); None:
            each log's own folder.

    Returns:
        Each seed's exit code.
    """
    pending = list(commands)
    running: dict[int, subprocess.Popen[bytes]] = {}
    codes: dict[int, int] = {}

    def finish(seed: int, code: int, why: str | None = None) -> None:
        codes[seed] = code
        if why is not None:
            sys.stderr.write(f"amago: seed {seed} could not start: {why}\n")
        elif code != 0:
            sys.stderr.write(f"amago: seed {seed} failed (exit {code}): {last_line(logs[seed])}\n")
        else:
            sys.stderr.write(f"amago: seed {seed} finished ({len(codes)}/{len(commands)})\n")
        on_exit(seed, code)

    def forward_sigterm(signum: int, frame: Any) -> None:
        # A scheduler that stops the driver stops its seeds too, each the clean way (a checkpoint, then exit).
        for process in running.values():
            process.send_signal(signal.SIGTERM)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, forward_sigterm) if _main_thread() else None
    try:
        while pending or running:
            while pending and len(running) < parallel:
                seed = pending.pop(0)
                try:
                    running[seed] = start_child(commands[seed], logs[seed], root=root)
                except OSError as exc:  # the path gate refused its log: the other seeds go on
                    finish(seed, START_FAILED, str(exc))
            for seed, process in list(running.items()):
                code = process.poll()
                if code is not None:
                    del running[seed]
                    finish(seed, code)
            if running:
                time.sleep(poll_seconds)
    except KeyboardInterrupt:
        for seed, process in running.items():
            finish(seed, process.wait())
        raise
    except Exception:
        # No seed left running unwatched: each saves its checkpoint and exits, `--resume` continues it.
        for process in running.values():
            process.send_signal(signal.SIGTERM)
        for process in running.values():
            process.wait()
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return codes


def _main_thread() -> bool:
    """Signal handlers can only be set from the main thread (a test runner's worker thread cannot)."""
    return threading.current_thread() is threading.main_thread()


def final_return(run_dir: Path) -> float | None:
    """A run's final return from its ``metrics.jsonl``: the last test return, else the last val return."""
    metrics = run_dir / "metrics.jsonl"
    found: dict[str, float] = {}
    try:
        lines = metrics.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
        for split in ("test", "val"):
            value = record.get(f"{split}/{_RETURN_KEY}")
            if isinstance(value, int | float):
                found[split] = float(value)
    return found.get("test", found.get("val"))


def start_group(
    group: SeedGroup,
    config: Mapping[str, Any],
    seeds: Sequence[int],
    parallel: int,
    command: Sequence[str],
    *,
    allow_traj_pickles: bool = False,
) -> int:
    """Writes the group folder (config and record) and runs every seed from the start, holding the group's lock
    (:func:`held`). Returns the exit code.

    Raises:
        GroupError: the folder already holds something (one line: resume it, or pass another name).
        amago_core.experiment.run_lock.RunInUseError: another process drives a group in this folder.
        amago_core.io.UnsafePathError: a file of the group would be written through a link.
    """
    with held(group):
        _refuse_a_used_folder(group)
        return _start_locked(group, config, seeds, parallel, command, allow_traj_pickles=allow_traj_pickles)


def _refuse_a_used_folder(group: SeedGroup) -> None:
    """A fresh group starts only in an empty folder (its own lock file aside), so that it never mixes in."""
    from amago_core.experiment.run_lock import LOCK_FILE

    if any(name != LOCK_FILE for name in os.listdir(group.root)):
        msg = (
            f"{group.root} already exists: `amago run --resume {group.root}` finishes its seeds, or pass "
            "another --name"
        )
        raise GroupError(msg)


def _start_locked(
    group: SeedGroup,
    config: Mapping[str, Any],
    seeds: Sequence[int],
    parallel: int,
    command: Sequence[str],
    *,
    allow_traj_pickles: bool,
) -> int:
    from amago_core.config.sources import PROVENANCE_KEY

    logs = _open_logs(group, seeds)
    record_config = {**config, PROVENANCE_KEY: {"written_by": "amago run --seeds"}}
    atomic_write_json(group.config, record_config, root=group.root)
    overrides = connect_overrides(config)
    record = {
        "seeds": list(seeds),
        "command": list(command),
        "parallel": parallel,
        "config": GROUP_CONFIG_NAME,
        "exit_codes": {},
    }
    group.write_record(record)
    commands = {
        seed: seed_command(
            group, seed, resume=False, overrides=overrides, allow_traj_pickles=allow_traj_pickles
        )
        for seed in seeds
    }
    return _drive(group, record, commands, logs, parallel)


def resume_group(
    group: SeedGroup, parallel: int | None, overrides: Sequence[str] = (), *, allow_traj_pickles: bool = False
) -> int:
    """Finishes a group: the seeds that did not exit 0 continue from their checkpoint, or start if they have
    no run folder yet. ``overrides`` (``-o`` items of folder-owned settings: wandb, Ray, the buffer's place)
    go to every seed, since the group folder never chooses them. Returns the exit code.

    The group's lock is held throughout (:func:`held`), and every seed of the record, finished ones too (the
    summary reads them), must be one of the group's own folders before any seed starts.

    Raises:
        GroupError: the record cannot be read or holds something other than ``amago run --seeds`` writes.
        amago_core.experiment.run_lock.RunInUseError: another process drives the group.
        amago_core.io.UnsafePathError: a seed's folder is a link or a file, or a log or record is a link.
    """
    with held(group):
        return _resume_locked(group, parallel, overrides, allow_traj_pickles=allow_traj_pickles)


def _resume_locked(
    group: SeedGroup, parallel: int | None, overrides: Sequence[str], *, allow_traj_pickles: bool
) -> int:
    from amago_core.config.sources import RUN_RECORD_NAME

    record = group.read_record()
    members = {seed: group.member(seed) for seed in record["seeds"]}
    done = {int(seed) for seed, code in record.get("exit_codes", {}).items() if code == 0}
    commands = {
        seed: seed_command(
            group,
            seed,
            resume=(members[seed] / RUN_RECORD_NAME).is_file(),
            overrides=overrides,
            allow_traj_pickles=allow_traj_pickles,
        )
        for seed in record["seeds"]
        if seed not in done
    }
    logs = _open_logs(group, commands)
    if not commands:
        sys.stderr.write(f"amago: every seed of {group.root} has finished; nothing to resume.\n")
    else:
        sys.stderr.write(f"amago: resuming seeds {', '.join(map(str, commands))} of {group.root}\n")
    return _drive(group, record, commands, logs, parallel or record["parallel"])


def _open_logs(group: SeedGroup, seeds: Iterable[int]) -> dict[int, Path]:
    """The seeds' logs, each opened once (created) through the path gate before anything of the group is
    written or started, so that a planted link stops the group in one line rather than halfway.

    Raises:
        amago_core.io.UnsafePathError: a log, or ``logs/``, is a link; or a log is hard-linked.
    """
    logs = {seed: group.log(seed) for seed in seeds}
    for log in logs.values():
        open_log(log, group.root).close()
    return logs


def _drive(
    group: SeedGroup,
    record: dict[str, Any],
    commands: Mapping[int, Sequence[str]],
    logs: Mapping[int, Path],
    parallel: int,
) -> int:
    from amago_core.cli.output import print_json

    def on_exit(seed: int, code: int) -> None:
        record["exit_codes"][str(seed)] = code
        group.write_record(record)

    try:
        run_seeds(commands, logs, parallel, on_exit, root=group.root)
    except KeyboardInterrupt:
        sys.stderr.write(f"amago: stopped; `amago run --resume {group.root}` finishes the other seeds.\n")
        return 130
    summary = group_summary(group, record)
    atomic_write_json(group.summary, summary, root=group.root)  # what `amago compare` and scripts read
    print_json(summary)
    if summary["failed"]:
        sys.stderr.write(
            f"amago: {len(summary['failed'])} seed(s) failed (logs in {group.root / 'logs'}); "
            f"`amago run --resume {group.root}` retries them.\n"
        )
        return 1
    return 0


def group_summary(group: SeedGroup, record: Mapping[str, Any]) -> dict[str, Any]:
    """Every seed's exit code and final return, and the mean return over the seeds that report one."""
    codes = record.get("exit_codes", {})
    rows = []
    for seed in record["seeds"]:
        rows.append(
            {
                "seed": seed,
                "exit_code": codes.get(str(seed)),
                "final_return": final_return(group.run_dir(seed)),
                "run_dir": str(group.run_dir(seed)),
            }
        )
    returns = [row["final_return"] for row in rows if row["final_return"] is not None]
    return {
        "group": str(group.root),
        "seeds": rows,
        "mean_final_return": sum(returns) / len(returns) if returns else None,
        "failed": [row["seed"] for row in rows if row["exit_code"] != 0],
    }
