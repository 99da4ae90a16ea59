"""`amago doctor RUN_DIR`: a run folder's disk use by part (checkpoints, buffer, quarantine, metrics, wandb...).

It only reads. A run folder may come from anyone, so no symlink in it is followed (one to a big folder elsewhere
would have that folder counted, and walked for as long as it takes): the report lists the links it did not follow
instead. A record that cannot be read (one nested past what Python parses included) leaves the bounds unknown,
and the report says so.

Torch-free: the buffer's bound is read from ``amago_core.data`` (numpy) only when a run folder is examined.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from amago_core.cli.output import console, fail, print_json

RUN_FOLDER_MARKERS = ("config.resolved.json", "metrics.jsonl", "ckpts")
"""A folder holding any of these is taken for a run folder (``{ckpt_base_dir}/{run_name}``)."""
METRICS_FILES = "metrics*.jsonl"
"""The run's metrics files: ``metrics.jsonl``, a collector's ``metrics-collect.jsonl``, rolled-back records."""
SHOWN_LINKS = 5
"""The printed report names this many of the symlinks it did not follow (``--json`` lists them all)."""


@dataclass
class DiskPart:
    """One part of a run's files: where it is, what it holds on disk, and what bounds it."""

    name: str
    where: Path
    bound: str
    """What keeps the part from growing without end (the setting that does, or that nothing does)."""
    bytes: int = 0
    files: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "part": self.name,
            "path": str(self.where),
            "bytes": self.bytes,
            "files": self.files,
            "bound": self.bound,
        }


@dataclass
class FolderScan:
    """What a walk of a folder found; links are never followed."""

    files: list[tuple[Path, int]] = field(default_factory=list)
    """``(path, bytes on disk)`` of every file."""
    links: list[tuple[Path, str]] = field(default_factory=list)
    """``(path, where it points)`` of every symlink met: neither followed nor counted."""


@dataclass
class RunDiskUse:
    """A run folder's disk use: its parts, the links not followed, and what the report could not read."""

    parts: list[DiskPart]
    links: list[tuple[Path, str]]
    notes: list[str]


def file_disk_bytes(stat: os.stat_result) -> int:
    """Bytes a file takes on disk (its allocated blocks, as ``du`` counts), else its length."""
    blocks = getattr(stat, "st_blocks", None)
    return stat.st_size if blocks is None else blocks * 512


def scan_folder(folder: Path) -> FolderScan:
    """Every file under ``folder`` with its bytes on disk, and every symlink met (never followed).

    ``folder`` itself is walked only when it is a real folder: a symlink there is listed, not followed.
    """
    found = FolderScan()
    if folder.is_symlink():
        found.links.append((folder, os.readlink(folder)))
        return found
    pending = [folder]
    while pending:
        try:
            with os.scandir(pending.pop()) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    found.links.append((Path(entry.path), os.readlink(entry.path)))
                elif entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                else:
                    found.files.append((Path(entry.path), file_disk_bytes(entry.stat(follow_symlinks=False))))
            except FileNotFoundError:
                continue  # removed while being counted (a running run rotates its files)
    return found


def folder_disk_use(folder: Path) -> tuple[int, int]:
    """``(bytes on disk, files)`` under ``folder`` (0, 0 when it does not exist); symlinks not followed."""
    files = scan_folder(folder).files
    return sum(size for _, size in files), len(files)


def is_run_folder(path: Path) -> bool:
    """Whether ``path`` is a folder holding one of :data:`RUN_FOLDER_MARKERS`."""
    return path.is_dir() and any(os.path.lexists(path / marker) for marker in RUN_FOLDER_MARKERS)


def _run_config(run_dir: Path) -> tuple[dict[str, Any], str | None]:
    """The run's resolved config, and why it could not be read (None when it was, or when there is none)."""
    path = run_dir / "config.resolved.json"
    if not os.path.lexists(path):
        return {}, None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return {}, f"{path} cannot be read ({first})"
    except RecursionError:
        return {}, f"{path} nests more deeply than Python parses (no record amago writes does)"
    if not isinstance(config, dict):
        return {}, f"{path} holds no JSON object"
    return config, None


def _table(config: dict[str, Any], name: str) -> dict[str, Any]:
    """``config[name]`` when it is a table, else empty (a hand-edited record may hold anything there)."""
    table = config.get(name)
    return table if isinstance(table, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def run_buffer_folder(run_dir: Path, config: dict[str, Any]) -> Path:
    """The run's replay buffer: ``{replay.dset_root}/{replay.dset_name}/buffer``, where dset_root defaults to the
    run's base folder and dset_name to the run's name (so by default ``RUN_DIR/buffer``, whatever the run
    folder is called now). A buffer in the run folder once ``..`` is resolved is named under it (the walk of
    the run folder counts it)."""
    replay = _table(config, "replay")
    dset_root, dset_name = _text(replay.get("dset_root")), _text(replay.get("dset_name"))
    if dset_root is None:
        buffer = (run_dir.parent / dset_name if dset_name else run_dir) / "buffer"
    else:
        name = dset_name or _text(_table(config, "run").get("name")) or run_dir.name
        buffer = Path(dset_root) / name / "buffer"
    base, target = os.path.abspath(run_dir), os.path.abspath(buffer)
    if os.path.commonpath([base, target]) == base:
        return run_dir / os.path.relpath(target, base)
    return buffer


def _bounds(config: dict[str, Any]) -> dict[str, str]:
    """What bounds each part, with the run's own settings where it has them."""
    from amago_core.data.disk_buffer import QUARANTINE_MAX_FILES  # numpy: only when a run folder is examined

    schedule, replay = _table(config, "schedule"), _table(config, "replay")
    keep_policies = schedule.get("keep_policies", "?")
    policies = (
        "all (schedule.keep_policies = None)"
        if keep_policies is None
        else f"newest {keep_policies} (schedule.keep_policies)"
    )
    every_state, every_policy = schedule.get("keep_state_every"), schedule.get("keep_policy_every")
    return {
        "training states": f"newest {schedule.get('keep_states', '?')} (schedule.keep_states)"
        + (f" + epochs divisible by {every_state}" if every_state else ""),
        "policy weights": policies + (f" + epochs divisible by {every_policy}" if every_policy else ""),
        "rolling state": "the newest epoch only",
        "buffer files": f"{replay.get('dset_max_size', '?')} FIFO files (replay.dset_max_size)",
        "quarantine": f"newest {QUARANTINE_MAX_FILES} files",
        "metrics": "append-only: 0.5-2.5 kB a record",
        "plots": "redrawn in place",
        "videos": "a folder per eval --video",
        "wandb": "wandb's: wandb sync, wandb clean",
        "other": "",
    }


def _outside(run_dir: Path, buffer: Path) -> bool:
    return run_dir not in buffer.parents


def run_disk_use(run_dir: Path) -> RunDiskUse:
    """A run's disk use by part, in a fixed order; files under the run folder that no part claims are "other".

    A buffer outside the run folder (``replay.dset_root`` or ``replay.dset_name`` set) is counted where it is.
    Symlinks are listed, never followed nor counted.
    """
    config, problem = _run_config(run_dir)
    notes = [f"{problem}: the bounds it would give show as ?"] if problem else []
    bounds = _bounds(config)
    buffer = run_buffer_folder(run_dir, config)
    ckpts = run_dir / "ckpts"
    folders = {
        "training states": ckpts / "training_states",
        "policy weights": ckpts / "policy_weights",
        "rolling state": ckpts / "latest",
        "buffer files": buffer,
        "quarantine": buffer / "quarantine",
        "metrics": run_dir / METRICS_FILES,
        "plots": run_dir / "plots",
        "videos": run_dir / "videos",
        "wandb": run_dir / "wandb",
        "other": run_dir,
    }
    parts = {name: DiskPart(name, where, bounds[name]) for name, where in folders.items()}
    # Innermost first: the quarantine sits inside the buffer folder, and the buffer may sit in the run folder.
    claim_order = [
        parts["quarantine"],
        *(part for part in parts.values() if part.name not in ("quarantine", "metrics", "other")),
    ]

    def part_of(path: Path) -> DiskPart:
        if path.parent == run_dir and fnmatch(path.name, METRICS_FILES):
            return parts["metrics"]
        return next((part for part in claim_order if part.where in path.parents), parts["other"])

    links: list[tuple[Path, str]] = []
    for folder in (run_dir, *([buffer] if _outside(run_dir, buffer) else [])):
        scan = scan_folder(folder)
        links += scan.links
        for path, size in scan.files:
            part = part_of(path)
            part.bytes += size
            part.files += 1
    return RunDiskUse(list(parts.values()), links, notes)


def _readable_bytes(count: int) -> str:
    """``87.2 MB``: decimal units, as the buffer's own ``Buffer Disk Space (GB)`` metric."""
    size = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


def _links_line(links: list[tuple[Path, str]]) -> str:
    shown = ", ".join(f"{path} -> {target}" for path, target in links[:SHOWN_LINKS])
    more = f" and {len(links) - SHOWN_LINKS} more" if len(links) > SHOWN_LINKS else ""
    return f"not followed: {len(links)} symlink(s), whose targets are not counted: {shown}{more}"


def report_run_disk_use(run_dir: Path, as_json: bool) -> None:
    """Prints a run folder's disk use by part (``amago doctor RUN_DIR``); one line when it is no run folder."""
    if not is_run_folder(run_dir):
        fail(
            f"{run_dir} is not an amago run folder (it holds none of {', '.join(RUN_FOLDER_MARKERS)}); give "
            "{ckpt_base_dir}/{run_name}"
        )
    use = run_disk_use(run_dir)
    total_bytes = sum(part.bytes for part in use.parts)
    total_files = sum(part.files for part in use.parts)
    if as_json:
        print_json(
            {
                "run_dir": str(run_dir),
                "bytes": total_bytes,
                "files": total_files,
                "parts": [part.to_json() for part in use.parts],
                "symlinks_not_followed": [{"path": str(path), "to": target} for path, target in use.links],
                "notes": use.notes,
            }
        )
        return
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    buffer = next(part.where for part in use.parts if part.name == "buffer files")
    # Title and buffer line printed apart from the table: a table wraps its title to its own width.
    out = console()
    out.print(f"disk use of {escape(str(run_dir))}: {_readable_bytes(total_bytes)} in {total_files} files")
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("part", no_wrap=True)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("files", justify="right", no_wrap=True)
    table.add_column("bounded by")
    for part in use.parts:
        table.add_row(part.name, _readable_bytes(part.bytes), str(part.files), escape(part.bound))
    out.print(table)
    if _outside(run_dir, buffer):
        out.print(f"buffer files and quarantine: {escape(str(buffer))}")
    if use.links:
        out.print(escape(_links_line(use.links)), soft_wrap=True)
    for note in use.notes:
        out.print(escape(note), soft_wrap=True)
