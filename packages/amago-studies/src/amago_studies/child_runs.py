"""The ``amago run`` processes that ``amago run --seeds`` and ``amago sweep`` start: their command and their log.

Each seed or trial is its own ``python -m amago_core.cli.app run`` process, so that one that crashes (or runs
out of memory) takes no other with it. torch is never imported here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from amago_core.cli.output import fail
from amago_core.io import inside, open_append_inside

KEPT_BY_COMMAND = ("run.ckpt_base_dir", "run.name")
"""Folder-owned settings each child's command line sets itself (its folder), never passed on with ``-o``."""


def connect_overrides(config: Mapping[str, Any]) -> list[str]:
    """``-o`` items that give each child the config's folder-owned settings (what it connects to: wandb, Ray,
    the buffer's place), which a child never takes from its group's or sweep's record file."""
    from amago_core.config.sources import folder_owned_settings

    owned = folder_owned_settings(config)
    return [f"{key}={json.dumps(value)}" for key, value in owned.items() if key not in KEPT_BY_COMMAND]


def connect_overrides_only(folder: Path, overrides: Sequence[str], what: str) -> list[str]:
    """The ``-o`` items a resume of a seed group or a sweep passes to every child: only the settings such a
    folder never chooses (wandb, Ray, the buffer's place); exits 2 naming any other.

    Args:
        folder: the group or sweep folder being resumed.
        overrides: the resuming command's ``-o`` items.
        what: what the folder is, for the message (``"a seed group"``, ``"a sweep"``).
    """
    from amago_core.config.sources import FOLDER_OWNED_SETTINGS

    allowed = {f"{section}.{key}" for section, key in FOLDER_OWNED_SETTINGS} - set(KEPT_BY_COMMAND)
    refused = [item for item in overrides if item.partition("=")[0].strip() not in allowed]
    if refused:
        fail(
            f"{folder} is {what}: it resumes with the config it started with, so -o may only set "
            f"{', '.join(sorted(allowed))} (refused: {', '.join(refused)})"
        )
    return list(overrides)


def child_run_command(
    *,
    config: Path | None = None,
    name: str | None = None,
    base_dir: Path | None = None,
    seed: int | None = None,
    resume: Path | None = None,
    overrides: Sequence[str] = (),
    allow_traj_pickles: bool = False,
) -> list[str]:
    """One ``amago run`` process: a fresh start from ``config`` into ``base_dir/name``, or ``--resume`` of a folder.

    Preflight is skipped: the parent checked the config once, and a wall-time estimate per child would only
    repeat itself. ``allow_traj_pickles`` is the parent invocation's choice, passed on (never read from a folder).

    Args:
        config: the resolved config record the child runs (a fresh start).
        name: the child's run folder name (a fresh start).
        base_dir: the folder the child's run folder goes in, as given now, not where the parent was first made.
        seed: ``--seed`` for the child, or None when the config sets it.
        resume: a run folder to continue instead of a fresh start.
        overrides: ``-o`` items (the settings a folder never chooses: wandb, Ray, the buffer's place).
        allow_traj_pickles: pass ``--allow-traj-pickles`` on.
    """
    command = [sys.executable, "-m", "amago_core.cli.app", "run", "--no-preflight"]
    if allow_traj_pickles:
        command.append("--allow-traj-pickles")
    for item in overrides:
        command += ["-o", item]
    if resume is not None:
        return [*command, "--resume", str(resume)]
    if config is None or name is None or base_dir is None:
        msg = "child_run_command: a fresh start needs config, name and base_dir"
        raise TypeError(msg)
    command += ["-c", str(config), "--name", name, "-o", f"run.ckpt_base_dir={base_dir}"]
    if seed is not None:
        command += ["--seed", str(seed)]
    return command


def open_log(log: Path, root: Path) -> IO[str]:
    """Opens a child's log for appending through the path gate: ``log`` must stay in ``root`` through no
    symlink, and must not be hard-linked (:func:`amago_core.io.open_append_inside`); its folder is created.

    A group or sweep folder may come from anyone: a log planted as a link to someone else's file would
    otherwise have a child's output appended to that file.

    Raises:
        amago_core.io.UnsafePathError: one line naming the link (nothing is created or written).
    """
    inside(root, log)  # before the log's folder is made: that folder may be the link
    log.parent.mkdir(parents=True, exist_ok=True)
    return open_append_inside(root, log)


def start_child(command: Sequence[str], log: Path, *, root: Path | None = None) -> subprocess.Popen[bytes]:
    """Starts ``command`` with stdout and stderr appended to ``log`` (unbuffered, so the log shows how far it got).

    Args:
        command: the child's command line.
        log: its log file, opened with :func:`open_log`.
        root: the group or sweep folder the log must stay in; None: the log's own folder (then the log itself
            is checked, not the folders above it).

    Raises:
        amago_core.io.UnsafePathError: the log is a link or leaves ``root`` (the child is not started).
    """
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open_log(log, log.parent if root is None else root) as handle:
        return subprocess.Popen(
            list(command), stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, env=environment
        )


def last_line(path: Path) -> str:
    """The last non-empty line of a log (what a failed child reports), or a note that there is none."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(empty log)"
