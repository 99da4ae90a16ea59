"""Where a run keeps its files, which checkpoints it keeps, and what a failed write tells the user.

Layout (ARCHITECTURE §6)::

    {ckpt_base_dir}/{run_name}/
      config.resolved.json    spaces.json    metrics.jsonl    plots/*.png
      ckpts/training_states/{run_name}_epoch_{e}/   accelerate state + progress.json
      ckpts/policy_weights/policy_epoch_{e}.safetensors
      ckpts/latest/policy.safetensors
      ckpts/latest/state_epoch_{e}/               the rolling state (the newest completed epoch)

Writes go to temp names renamed into place, so a failed write leaves the previous files complete;
:class:`RunFolderWriteError` then stops the run with one line naming the folder and what to free. Every write,
rename and delete first checks its path with :meth:`RunPaths.check` (a planted symlink must not steer it).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amago_core.data.writer import TrajectoryWriteError
from amago_core.io import UnsafePathError, atomic_write, atomic_write_json, atomic_write_text, inside

__all__ = [
    "PROGRESS_FILE",
    "WRITE_ONLY_ERRNOS",
    "RunFolderWriteError",
    "RunPaths",
    "UnsafePathError",
    "as_write_failures",
    "atomic_write",
    "atomic_write_json",
    "atomic_write_text",
    "buffer_dir_of",
    "describe_write_failure",
    "find_write_failure",
    "kept_epochs",
    "recorded_epoch",
    "replace_dir",
    "write_failure_of",
]

PROGRESS_FILE = "progress.json"
"""Inside each training-state folder: epoch, gradient steps and frame counts to resume from."""


@dataclass(frozen=True)
class RunPaths:
    """The files and folders of one run."""

    base: Path
    run_name: str

    @property
    def root(self) -> Path:
        return self.base / self.run_name

    @property
    def config(self) -> Path:
        return self.root / "config.resolved.json"

    @property
    def spaces(self) -> Path:
        """The spaces the agent was built with (``amago_tools.policy`` loads the policy without building an env)."""
        return self.root / "spaces.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    @property
    def ckpts(self) -> Path:
        return self.root / "ckpts"

    @property
    def training_states(self) -> Path:
        return self.ckpts / "training_states"

    @property
    def policy_weights(self) -> Path:
        return self.ckpts / "policy_weights"

    @property
    def latest_policy(self) -> Path:
        return self.ckpts / "latest" / "policy.safetensors"

    def training_state(self, epoch: int) -> Path:
        """The kept training state of ``epoch`` (every ``ckpt_interval`` epochs; AMAGO's layout)."""
        return self.training_states / f"{self.run_name}_epoch_{epoch}"

    def rolling_state(self, epoch: int) -> Path:
        """The rolling training state of the newest completed epoch (older ones are removed after it is written)."""
        return self.latest_policy.parent / f"state_epoch_{epoch}"

    def policy_at(self, epoch: int) -> Path:
        return self.policy_weights / f"policy_epoch_{epoch}.safetensors"

    def saved_policies(self) -> list[tuple[int, Path]]:
        """``(epoch, file)`` of every policy weights file of ``ckpt_interval`` epochs, oldest first (each one is
        complete: they are written under a temp name and renamed)."""
        if not self.policy_weights.is_dir():
            return []
        matches = ((_POLICY_FILE.match(child.name), child) for child in self.policy_weights.iterdir())
        return sorted((int(match.group(1)), child) for match, child in matches if match)

    def check(self, path: Path) -> Path:
        """Returns ``path`` once checked to stay in the run folder through no symlink (call before writing,
        renaming or deleting it).

        Raises:
            UnsafePathError: it would leave the run folder (one line naming the symlink or the path).
        """
        return inside(self.root, path)

    def holds_a_run(self) -> bool:
        """Whether the folder already holds a run: its resolved config, a training state or policy weights."""
        return (
            self.config.is_file()
            or self.latest_policy.is_file()
            or bool(self.saved_states())
            or bool(self.saved_policies())
        )

    def make_dirs(self) -> None:
        """Creates the checkpoint and plot folders (as real folders: an existing symlink among them is refused).

        Raises:
            UnsafePathError: one of them, or a folder above it in the run folder, is a symlink.
        """
        for folder in (self.training_states, self.policy_weights, self.latest_policy.parent, self.plots):
            self.check(folder).mkdir(parents=True, exist_ok=True)

    def saved_states(self) -> list[tuple[int, Path]]:
        """``(epoch, folder)`` of every complete training state, oldest first (a kept one before a rolling one).

        Kept states are found by their ``*_epoch_{e}`` suffix, whatever run name prefixes them (a copied or
        renamed run folder still finds them), and are complete once their progress file exists. The epoch is
        the one that file records (a folder's name may say anything); the name's only when it cannot be read
        (loading then fails, and says why). A state folder that is a symlink is not this run's: not listed.
        """
        found: list[tuple[int, int, Path]] = []
        for rank, (folder, pattern) in enumerate(
            ((self.training_states, _KEPT_STATE), (self.latest_policy.parent, _ROLLING_STATE))
        ):
            if not folder.is_dir():
                continue
            for child in folder.iterdir():
                match = pattern.match(child.name)
                if match and not child.is_symlink() and (child / PROGRESS_FILE).is_file():
                    epoch = recorded_epoch(child)
                    found.append((int(match.group(1)) if epoch is None else epoch, rank, child))
        return [(epoch, path) for epoch, _, path in sorted(found)]

    def saved_epochs(self) -> list[int]:
        """Epochs with a complete training state, oldest first."""
        return sorted({epoch for epoch, _ in self.saved_states()})


_KEPT_STATE = re.compile(r"^.+_epoch_(\d+)$")
_ROLLING_STATE = re.compile(r"^state_epoch_(\d+)$")
_POLICY_FILE = re.compile(r"^policy_epoch_(\d+)\.safetensors$")


def recorded_epoch(state: Path) -> int | None:
    """The epoch a training-state folder's progress file records (None: missing or unreadable)."""
    try:
        epoch = json.loads((state / PROGRESS_FILE).read_text(encoding="utf-8"))["epoch"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 0 else None


def kept_epochs(epochs: Iterable[int], newest: int | None, every: int | None) -> set[int]:
    """Which of ``epochs`` a retention rule keeps: the ``newest`` N (None: all), plus every multiple of ``every``.

    The newest epoch is always among them (``newest`` is at least 1), so the state a resume needs survives.
    """
    ordered = sorted(set(epochs))
    keep = set(ordered if newest is None else ordered[max(len(ordered) - newest, 0) :])
    if every:
        keep.update(epoch for epoch in ordered if epoch % every == 0)
    return keep


def replace_dir(target: Path, fill: Callable[[Path], None]) -> None:
    """Fills a fresh temp folder with ``fill(tmp)``, then swaps it in for ``target``.

    A crash leaves either the old folder or the new one complete (plus a stray temp folder that later calls
    clean up), because the swap is a rename.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        fill(tmp)
        if target.exists():
            old = target.with_name(f".{target.name}.old.tmp")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


WRITE_ONLY_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})
"""OSError codes only a write raises: met anywhere in the loop (a metrics line, a plot), they are a failed write."""

_OS_ERROR_CODE = re.compile(r"\(os error (\d+)\)")


class RunFolderWriteError(OSError):
    """Writing into a run folder or its replay buffer failed (disk full, quota, read-only...), so the run stopped.

    The message is one line naming the file, the cause and what to free. What was already on disk is left
    complete (the failed write was under a temp name and is removed): the newest complete checkpoint and every
    buffer file load, and `amago run --resume` (``start(resume=True)``) continues from that checkpoint.

    Attributes:
        path: what was being written.
        errno: the OSError code of the failure (None when the error carried none).
    """

    def __init__(self, message: str, path: str | Path, code: int | None = None) -> None:
        super().__init__(message)
        self.path = Path(path)
        self.errno = code
        self.filename = str(path)

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[type[RunFolderWriteError], tuple[str, Path, int | None]]:
        return type(self), (str(self), self.path, self.errno)


def os_error_code(message: str) -> int | None:
    """The OS error code in a message such as safetensors' ``I/O error: No space left on device (os error 28)``.

    safetensors reports a failed write as ``SafetensorError``, whose only trace of the cause is that text.
    """
    match = _OS_ERROR_CODE.search(message)
    return int(match.group(1)) if match else None


def find_write_failure(exc: BaseException) -> tuple[OSError, Path | None] | None:
    """The failed write behind ``exc`` (itself or a cause), with the file it was writing when known; else None.

    A trajectory file that could not be written counts whatever the code (an async env worker re-raises it
    wrapped); any other OSError counts only when its code is one a write alone raises (:data:`WRITE_ONLY_ERRNOS`),
    since a read or a broken pipe is no disk problem.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and (
            isinstance(current, RunFolderWriteError | TrajectoryWriteError)
            or current.errno in WRITE_ONLY_ERRNOS
        ):
            return current, Path(current.filename) if isinstance(current.filename, str) else None
        current = current.__cause__ or current.__context__
    return None


def _bytes_under(folder: Path | None) -> int:
    total = 0
    if folder is not None and folder.is_dir():
        for parent, _, files in os.walk(folder):
            for name in files:
                with suppress(OSError):  # removed meanwhile (FIFO deletion)
                    total += os.lstat(os.path.join(parent, name)).st_size
    return total


def _size(num_bytes: int) -> str:
    if num_bytes < 1e6:
        return f"{num_bytes / 1e3:.0f} kB"
    return f"{num_bytes / 1e6:.1f} MB" if num_bytes < 1e7 else f"{num_bytes / 1e6:.0f} MB"


def describe_write_failure(
    exc: OSError, path: Path | None, paths: RunPaths, buffer_dir: Path | None
) -> RunFolderWriteError:
    """The one-line error for a failed write: the file, the cause, what to free (with sizes) and how to go on.

    Args:
        exc: the write's error.
        path: what was being written (None: unknown, the run folder is named).
        paths: the run's folders (their sizes and its newest complete checkpoint go into the message).
        buffer_dir: the replay buffer's folder (it may lie outside the run folder), if the run has one.
    """
    target = path if path is not None else paths.root
    writing = f"writing {target}" if path is not None else f"writing into {target}"
    code = exc.errno
    ckpts, buffer = _bytes_under(paths.ckpts), _bytes_under(buffer_dir)
    inside = buffer_dir is not None and buffer_dir.resolve().is_relative_to(paths.root.resolve())
    total = _bytes_under(paths.root) + (0 if inside else buffer)
    usage = (
        f"the run folder uses {_size(total)}: ckpts {_size(ckpts)}, buffer {_size(buffer)}; schedule.keep_states, "
        "schedule.keep_policies and replay.dset_max_size bound them"
    )
    saved = paths.saved_epochs()
    if saved:
        resume = (
            f"rerun with `amago run --resume {paths.root}`, which continues from epoch {saved[-1]} (the newest "
            "complete checkpoint, intact)"
        )
    elif paths.config.is_file():
        resume = (
            f"rerun with `amago run --resume {paths.root}` (no checkpoint was complete yet: it starts over)"
        )
    else:
        resume = "rerun"  # nothing of the run was written: there is nothing to resume
    advice = {
        errno.ENOSPC: f"no space left on device {writing}: free space on that disk ({usage})",
        errno.EDQUOT: f"disk quota exceeded {writing}: free space within your quota ({usage})",
        errno.EROFS: f"read-only file system {writing}: make that disk writable (or move the run folder to one)",
    }
    if code in advice:
        message = f"{advice[code]} and {resume}"
    elif code in (errno.EACCES, errno.EPERM):
        folder = target.parent if path is not None else target
        message = f"permission denied {writing}: make {folder} writable for this user and {resume}"
    else:
        reason = exc.strerror or str(exc) or type(exc).__name__
        message = f"failed {writing} ({reason}): fix that and {resume}"
    return RunFolderWriteError(message, target, code)


def write_failure_of(
    exc: BaseException, paths: RunPaths, buffer_dir: Path | None
) -> RunFolderWriteError | None:
    """``exc`` as the one-line :class:`RunFolderWriteError` when a failed write into the run folder or its buffer
    caused it (itself or a cause); None for any other error."""
    found = find_write_failure(exc)  # a RunFolderWriteError finds itself
    if found is None:
        return None
    error, path = found
    if isinstance(error, RunFolderWriteError):
        return error
    return describe_write_failure(error, path, paths, buffer_dir)


def buffer_dir_of(dataset: Any) -> Path | None:
    """The replay buffer's folder of ``dataset`` (a dataset without one on disk: None)."""
    folder = getattr(dataset, "buffer_dir", None)
    if folder is None and dataset is not None:
        folder = getattr(dataset, "save_new_trajs_to", None)
    return Path(folder) if folder is not None else None


@contextmanager
def as_write_failures(
    describe: Callable[[BaseException], RunFolderWriteError | None], on_failure: Callable[[], None]
) -> Iterator[None]:
    """Re-raises an error that a failed write into the run folder caused as its one-line
    :class:`RunFolderWriteError` (``describe``: ``Experiment.write_failure``), after ``on_failure()``; any other
    error passes unchanged."""
    try:
        yield
    except Exception as exc:
        failure = describe(exc)
        if failure is None:
            raise
        on_failure()
        if failure is exc:
            raise
        raise failure from exc
