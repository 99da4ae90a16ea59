"""Writes that a crash can never leave half-done: a temp file next to the target, renamed over it.

Torch-free, so that hook modules (the JSONL logger) and the experiment loop share one implementation.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Calls ``write(tmp)`` on a temp file next to ``path`` (its return value is ignored), then renames it over ``path``.

    The rename is atomic on one filesystem, so a reader (or a resumed run after a crash) sees the old file or
    the new one, never a partial one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        # mkstemp makes the file private (0600); give it the mode a plain open() would, so another user's
        # collect process on a shared filesystem can read the policy weights.
        os.chmod(tmp, 0o666 & ~_current_umask())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` atomically (UTF-8)."""
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def atomic_write_json(path: Path, data: Any) -> None:
    """Writes ``data`` as indented JSON to ``path`` atomically."""
    atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n")


__all__ = ["atomic_write", "atomic_write_json", "atomic_write_text"]
