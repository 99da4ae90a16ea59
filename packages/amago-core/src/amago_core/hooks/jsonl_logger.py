"""The always-on local log backend: one JSON object per line in ``{run_dir}/metrics.jsonl``.

The file is append-only and grows with the run (about 0.5 kB per val or dataset record, 2.5 kB per train record
of the default agent). Whatever reads it at resume or for plots streams it and parses only what it needs
(:func:`field_text`), so a file of a million records costs seconds and a few MB of memory, not a copy in RAM.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from amago_core.hooks.specs import hookimpl
from amago_core.io import atomic_write, inside, open_append_inside

ROLLED_BACK_SUFFIX = ".rolled-back.jsonl"
"""Records of redone epochs go to ``{stem}.rolled-back.jsonl`` next to the metrics file."""


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN/inf; keep them visible instead of dropping the record
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return _json_safe(value.item())
    return value


_BEFORE_KEY = frozenset(b"{ ")
"""A key's opening quote follows ``{`` or the space of ``", "``."""


def is_whole_flat_record(line: bytes) -> bool:
    """Whether ``line`` reads as one whole record as this backend writes it: ``{...}``, a newline, no nested object.

    A line cut short by a kill has no newline; a line that a later append glued onto such a torn line holds a
    second ``{``. Neither passes, so readers send them to ``json.loads`` (which refuses them) instead of
    picking fields out of them.
    """
    return line.startswith(b"{") and line.endswith(b"}\n") and line.count(b"{") == 1


def field_text(line: bytes, key: str) -> bytes | None:
    """The JSON text of ``key``'s value in a whole flat record (:func:`is_whole_flat_record`); None when absent.

    Found without parsing the line: this backend writes ``json.dumps`` with its default separators, and the
    text ``"key": `` can only be a key there (a quote inside a string is escaped, so a string never holds
    ``key": ``). The value is a scalar, so it ends at the next ``,`` or ``}`` (a string value may be cut at a
    comma inside it; no number is). Like ``json.loads``, the last of duplicate keys wins.

    Args:
        line: one line of the file, newline included, that passes :func:`is_whole_flat_record`.
        key: the key, plain text without quotes or backslashes.
    """
    field = b'"' + key.encode() + b'": '
    at = line.rfind(field)
    while at > 0 and line[at - 1] not in _BEFORE_KEY:  # the end of a key holding an escaped quote
        at = line.rfind(field, 0, at)
    if at < 1:
        return None
    start = at + len(field)
    comma = line.find(b",", start)
    end = line.find(b"}", start) if comma < 0 else comma
    return line[start:end]


def record_epoch(line: bytes) -> int | None:
    """The ``Epoch`` of one line of a metrics file; None for a line cut short, one without an epoch, or not a record."""
    if is_whole_flat_record(line):
        text = field_text(line, "Epoch")
        try:
            return None if text is None else int(text)
        except ValueError:
            return None  # a float or a string: not an epoch
    if not line.endswith(b"\n"):
        return None  # cut short by a kill: a later append would glue the next record onto it
    try:
        epoch = json.loads(line).get("Epoch")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return None
    return epoch if isinstance(epoch, int) else None


class JsonlLogBackend:
    """Appends metrics records to a JSONL file, flushed per record so a killed run keeps what it logged.

    The file is never written through a symlink (a run folder may come from anyone): a link there is refused
    with one line (:class:`amago_core.io.UnsafePathError`).
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open_append_inside(self.path.parent, self.path)

    def log(self, metrics: dict[str, Any], *, step: int) -> None:
        record = {"step": step, **{key: _json_safe(value) for key, value in metrics.items()}}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    @property
    def rolled_back_path(self) -> Path:
        """Where :meth:`rollback` moves records: ``{stem}.rolled-back.jsonl``."""
        return self.path.with_name(f"{self.path.stem}{ROLLED_BACK_SUFFIX}")

    def rollback(self, *, after_epoch: int) -> None:
        """Moves the records of epochs after ``after_epoch`` to ``{name}.rolled-back.jsonl`` (kept, not lost).

        A resumed run redoes those epochs; left in place, their records would make curves run backwards. A
        line cut short by a kill belongs to the work being redone and moves too. The file is streamed: when the
        moved records are its end (a plain resume), that end is copied out and the file truncated; when a
        kept record follows a moved one (``amago eval`` of an earlier epoch appended after them), the file is
        rewritten line by line into a temp file that replaces it.
        """
        self._file.close()
        inside(self.path.parent, self.path)
        inside(self.path.parent, self.rolled_back_path)

        def keeps(line: bytes) -> bool:
            epoch = record_epoch(line)
            return epoch is not None and epoch <= after_epoch

        first_moved, interleaved = _find_moved(self.path, keeps)
        if first_moved is not None:
            if interleaved:
                _split_lines(self.path, keeps, self.rolled_back_path)
            else:
                _move_tail(self.path, first_moved, self.rolled_back_path)
        self._file = open_append_inside(self.path.parent, self.path)


def _find_moved(path: Path, keeps: Callable[[bytes], bool]) -> tuple[int | None, bool]:
    """The byte offset of the first line to move (None: none) and whether a kept line follows it."""
    offset = 0
    first_moved: int | None = None
    with path.open("rb") as handle:
        for line in handle:
            if not keeps(line):
                if first_moved is None:
                    first_moved = offset
            elif first_moved is not None:
                return first_moved, True
            offset += len(line)
    return first_moved, False


def _append_lines(source: IO[bytes], out: IO[bytes]) -> None:
    """Copies the rest of ``source`` to ``out``, ending it with a newline (a torn last line gets one)."""
    last = b"\n"
    while chunk := source.read(1 << 20):
        out.write(chunk)
        last = chunk[-1:]
    if last != b"\n":
        out.write(b"\n")
    out.flush()
    os.fsync(out.fileno())


def _move_tail(path: Path, offset: int, rolled_back: Path) -> None:
    """Appends ``path`` from ``offset`` on to ``rolled_back``, then cuts ``path`` there.

    The copy is on disk before the cut: a crash in between leaves the records in both files, never in neither.
    """
    with path.open("rb") as source, rolled_back.open("ab") as out:
        source.seek(offset)
        _append_lines(source, out)
    os.truncate(path, offset)


def _split_lines(path: Path, keeps: Callable[[bytes], bool], rolled_back: Path) -> None:
    """Rewrites ``path`` with the lines ``keeps`` accepts; the others are appended to ``rolled_back``."""

    def write(tmp: Path) -> None:
        with path.open("rb") as source, tmp.open("wb") as kept, rolled_back.open("ab") as moved:
            for line in source:
                if keeps(line):
                    kept.write(line)
                else:
                    moved.write(line if line.endswith(b"\n") else line + b"\n")
            moved.flush()
            os.fsync(moved.fileno())

    atomic_write(path, write)


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Every record of a metrics.jsonl, in memory; a line cut short by a crash is skipped, not fatal.

    A long run's file is large: to draw it, stream it (amago-tools' ``read_curves`` keeps a bounded sample).
    """
    records = []
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            with contextlib.suppress(json.JSONDecodeError):
                records.append(json.loads(line.strip()))
    return records


def metrics_file_name(mode: str | None) -> str:
    """``metrics.jsonl``; a collect-only process writes ``metrics-collect.jsonl`` so its records stay apart."""
    return "metrics-collect.jsonl" if mode == "collect" else "metrics.jsonl"


@hookimpl
def amago_log_backends(run_dir: Path, config: dict[str, Any]) -> JsonlLogBackend:
    """amago's own backend: always on."""
    return JsonlLogBackend(Path(run_dir) / metrics_file_name(config.get("run", {}).get("mode")))
