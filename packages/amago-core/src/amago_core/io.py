"""Writes that a crash can never leave half-done, and that never leave the folder they belong to.

A write goes to a temp file next to the target, renamed over it. A run folder may come from anyone (a
colleague's checkpoints, a paper's artefacts), so a symlink planted in it must not steer a write or a delete
elsewhere: :func:`inside` checks a path before amago writes or deletes there.

Torch-free, so that hook modules (the JSONL logger) and the experiment loop share one implementation.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any


class UnsafePathError(OSError):
    """A write or delete would leave its folder: a symlink on the way, or a path outside the folder.

    An ``OSError`` (``ELOOP``, what an ``O_NOFOLLOW`` open of a symlink raises), so that the code that turns a
    failed write into one line, and shares it between the processes of a run, handles it like any failed write.
    """

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(errno.ELOOP, message, str(path))

    def __str__(self) -> str:
        return str(self.strerror)


def inside(root: str | Path, path: str | Path) -> Path:
    """Returns ``path`` once it is checked to stay in ``root``: under it by name, and through no symlink.

    Every component from ``root`` (exclusive: the folder the user chose may itself be a link) down to ``path``
    (inclusive) that exists must be a real folder or file. Components that do not exist yet are created by the
    caller as real folders. Call it right before writing, renaming or deleting.

    Raises:
        UnsafePathError: ``path`` is not under ``root``, or a component below ``root`` is a symlink (the
            message names it and where it points).
    """
    root, path = Path(root), Path(path)
    base = Path(os.path.abspath(root))
    target = Path(os.path.abspath(path))
    if target != base and not target.is_relative_to(base):
        msg = f"{path} lies outside {root}: amago writes and deletes only inside the folder of the run or buffer"
        raise UnsafePathError(msg, path)
    current = base
    for part in target.relative_to(base).parts:
        current = current / part
        if os.path.islink(current):
            msg = (
                f"{current} is a symlink (to {os.readlink(current)}): amago never writes or deletes through a "
                f"symlink in {root}, which may point anywhere; replace it with a real folder or file"
            )
            raise UnsafePathError(msg, current)
        if not os.path.lexists(current):
            break  # what is below does not exist either: the caller creates it
    return path


def nests_deeper_than(data: Any, limit: int) -> bool:
    """Whether ``data`` (parsed JSON, TOML or YAML) nests tables or lists more than ``limit`` levels deep, walked
    without recursion, so that a hostile file cannot exhaust the stack here either."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, Mapping):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list | tuple):
            stack.extend((child, depth + 1) for child in node)
    return False


def open_append_inside(root: str | Path, path: str | Path) -> IO[str]:
    """Opens ``path`` for appending text (created if missing), checked with :func:`inside` and opened with
    ``O_NOFOLLOW``, so that a symlink put there between the check and the open is refused too. A file with
    another name elsewhere (a hard link) is refused as well: appending to it would change the other file.

    Raises:
        UnsafePathError: see :func:`inside`; or ``path`` is hard-linked.
    """
    inside(root, path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            inside(root, path)  # raises the one-line error naming the link
        raise
    try:
        refuse_hard_link(path, os.fstat(fd).st_nlink)
    except UnsafePathError:
        os.close(fd)
        raise
    return os.fdopen(fd, "a", encoding="utf-8")


def refuse_hard_link(path: str | Path, links: int) -> None:
    """Raises :class:`UnsafePathError` when ``path``, which amago is about to write in place (append to, or let
    SQLite write), has ``links`` > 1 names: writing it would change the file wherever its other names lie."""
    if links > 1:
        msg = (
            f"{path} is hard-linked ({links} names for one file): amago never writes in place to a file another "
            f"folder shares; give it a copy of its own (cp {path} {path}.copy && mv {path}.copy {path}) and retry"
        )
        raise UnsafePathError(msg, Path(path))


def member_folder(group: str | Path, name: str) -> Path:
    """``group / name`` once checked to be one of the group's own folders (a seed's or a trial's run): inside it
    through no symlink (:func:`inside`) and, when it exists, a real folder rather than a file.

    Raises:
        UnsafePathError: a symlink, a path outside ``group``, or a file where the member's folder belongs.
    """
    path = inside(group, Path(group) / name)
    if os.path.lexists(path) and not path.is_dir():
        msg = f"{path} is a file where the group's member folder {name} belongs: move it away and retry"
        raise UnsafePathError(msg, path)
    return path


def plain_file_mode() -> int:
    """The mode a plain ``open()`` would give a new file (0644 under a 022 umask).

    ``tempfile.mkstemp`` makes private (0600) files; a file renamed into place from one gets this mode instead,
    so that another user's process on a shared filesystem (a collect process, a colleague's ``amago eval``) can
    read the run's files.
    """
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: Path, write: Callable[[Path], object], *, root: Path | None = None) -> None:
    """Calls ``write(tmp)`` on a temp file next to ``path`` (its return value is ignored), then renames it over ``path``.

    The rename is atomic on one filesystem, so a reader (or a resumed run after a crash) sees the old file or
    the new one, never a partial one. A symlink at ``path`` is replaced by the file, never written through.

    Args:
        path: the file to write.
        write: writes the content to the temp file it is given.
        root: the folder ``path`` must stay in (see :func:`inside`); None: no check (a path the user chose).

    Raises:
        UnsafePathError: ``path`` leaves ``root`` (nothing is written).
    """
    if root is not None:
        inside(root, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.chmod(tmp, plain_file_mode())  # not mkstemp's private 0600
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: Path, text: str, *, root: Path | None = None) -> None:
    """Writes ``text`` to ``path`` atomically (UTF-8); ``root`` as in :func:`atomic_write`."""
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), root=root)


def atomic_write_json(path: Path, data: Any, *, root: Path | None = None) -> None:
    """Writes ``data`` as indented JSON to ``path`` atomically; ``root`` as in :func:`atomic_write`."""
    atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n", root=root)


__all__ = [
    "UnsafePathError",
    "atomic_write",
    "atomic_write_json",
    "atomic_write_text",
    "inside",
    "member_folder",
    "nests_deeper_than",
    "open_append_inside",
    "plain_file_mode",
    "refuse_hard_link",
]
