"""The ``amago run`` processes that ``amago run --seeds`` and ``amago sweep`` start: their command and their log.

Each seed or trial is its own ``python -m amago_core.cli.app run`` process, so that one that crashes (or runs
out of memory) takes no other with it. torch is never imported here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


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


def start_child(command: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
    """Starts ``command`` with stdout and stderr appended to ``log`` (unbuffered, so the log shows how far it got)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("ab") as handle:
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
