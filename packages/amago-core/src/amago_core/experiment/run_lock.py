"""One process per run: a lock held in the run folder for the life of a run, and no fresh run in an old folder.

Two learners in one folder would prune each other's checkpoints, interleave their metrics and mix their buffers.
So the process that writes a run's checkpoints (the main process of a ``both`` or ``learn`` run) holds an
exclusive ``flock`` on ``{run}/.amago.lock``, a file recording its pid, host, role and start time, which a
refused process names. The kernel drops a ``flock`` when its holder dies (even by ``SIGKILL``), so a killed
run's lock is simply taken over. The processes that share a run by design take no lock: the other processes of
an ``accelerate launch``, ``--mode collect`` processes and ``amago eval``.

``fcntl`` rather than ``filelock``, which truncates its file on every attempt (the holder could not be recorded);
the file is opened with ``O_NOFOLLOW``. Where ``fcntl`` does not exist (Windows), runs are not locked.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from amago_core.io import inside

LOCK_FILE = ".amago.lock"
"""The lock file in the run folder (hidden: it is no result of the run)."""


class RunInUseError(RuntimeError):
    """Another process holds the run's lock; the message names its pid and host."""


class ExistingRunError(RuntimeError):
    """A fresh (not resumed) run was started in a folder that already holds a run."""


class RunLock:
    """The held lock of one run (release it with :meth:`release`; the kernel releases it if the process dies).

    Attributes:
        path: the lock file.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Removes the lock file and drops the lock (idempotent).

        The file goes while the lock is still held: a process that opened it meanwhile finds, once it gets the
        lock, that the path no longer names its file, and starts over on a new one (see :func:`acquire`).
        """
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            if _same_file(self._fd, self.path):
                self.path.unlink()
        os.close(self._fd)  # drops the flock
        self._fd = None


def _same_file(fd: int, path: Path) -> bool:
    try:
        named = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _holder(fd: int) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        record = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        if isinstance(record, dict):
            return record
    return {}


def acquire(root: Path, role: str) -> RunLock | None:
    """Takes the run's lock for this process, recording ``role`` (``both``, ``learn``) with its pid and host.

    Returns:
        The held lock; None where ``fcntl`` does not exist (no lock is taken).

    Raises:
        RunInUseError: another live process holds it (one line naming its pid, host and role).
        amago_core.io.UnsafePathError: the lock file (or a folder above it in the run folder) is a symlink.
    """
    if sys.platform == "win32":
        return None
    import fcntl

    root = Path(root)
    path = inside(root, root / LOCK_FILE)
    root.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(20):  # each retry follows a release that removed the file between our open and lock
        fd = os.open(path, flags, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            since = holder.get("started")
            msg = (
                f"{root} is in use by another amago process (pid {holder.get('pid', '?')} on host "
                f"{holder.get('host', '?')}, {holder.get('role', 'a run')}"
                + (f", since {since}" if since else "")
                + "): one process writes a run at a time; wait for it to end or stop it, or choose another name"
            )
            raise RunInUseError(msg) from None
        except BaseException:
            os.close(fd)
            raise
        if not _same_file(fd, path):
            os.close(fd)  # the holder removed this file on release: lock the one the path names now
            continue
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "role": role,
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        }
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(record) + "\n").encode("utf-8"), 0)
        except OSError:
            os.close(fd)
            raise
        return RunLock(path, fd)
    msg = f"could not take the lock {path}: it kept being replaced; is another amago process starting there?"
    raise RunInUseError(msg)


def refuse_existing_run(paths: Any) -> None:
    """Refuses a fresh run in a folder that already holds one (its resolved config, a checkpoint or weights).

    Args:
        paths: the run's :class:`~amago_core.experiment.run_dir.RunPaths`.

    Raises:
        ExistingRunError: one line saying how to resume it or what else to do.
    """
    if paths.holds_a_run():
        msg = (
            f"{paths.root} already holds a run: resume it with `amago run --resume {paths.root}` "
            "(`start(resume=True)` in Python), or choose another run name; a fresh run never mixes into it."
        )
        raise ExistingRunError(msg)


def hold_run(
    paths: Any, accelerator: Any, role: Any, *, resume: bool, evaluation_only: bool
) -> RunLock | None:
    """Takes the lock a process of this role needs, and refuses a fresh run in a folder that holds one.

    Called at start, before anything of the run is written. With several processes the main process decides
    and every process raises the same error, so none waits at a barrier for one that stopped.

    Args:
        paths: the run's ``RunPaths``.
        role: the process's ``ProcessRole``.
        resume: continuing the run (``--resume``): the folder may hold it.
        evaluation_only: ``amago eval``: reads the run, takes no lock.

    Returns:
        The held lock (main process of a run that learns), else None.

    Raises:
        RunInUseError: another process holds the run.
        ExistingRunError: a fresh run in a folder that already holds one.
        amago_core.io.UnsafePathError: the lock file is a symlink.
    """
    writes_checkpoints = role.learns and not evaluation_only
    lock: RunLock | None = None
    problem: BaseException | None = None
    if writes_checkpoints and accelerator.is_main_process:
        try:
            lock = acquire(paths.root, "mode learn" if role.only_learns else "mode both")
            if not resume:
                refuse_existing_run(paths)
        except (RunInUseError, ExistingRunError, OSError) as exc:
            if lock is not None:
                lock.release()
                lock = None
            problem = exc
    if accelerator.num_processes > 1 and writes_checkpoints:
        from accelerate.utils import broadcast_object_list

        verdict = [None if problem is None else (type(problem).__name__, str(problem))]
        broadcast_object_list(verdict)
        if problem is None and verdict[0] is not None:
            kind, message = verdict[0]
            known = {cls.__name__: cls for cls in (RunInUseError, ExistingRunError)}
            problem = known.get(kind, RuntimeError)(message)
    if problem is not None:
        raise problem
    return lock


__all__ = [
    "LOCK_FILE",
    "ExistingRunError",
    "RunInUseError",
    "RunLock",
    "acquire",
    "hold_run",
    "refuse_existing_run",
]
