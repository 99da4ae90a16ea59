"""Several processes, one run: they must run the same settings and see the same run folder.

Each process of an ``accelerate launch`` resolves its config alone: a time-stamped run name, an ``-o`` or
``AMAGO_*`` variable given on one machine only, or ``--budget`` can give them different jobs, which ends in a hang
at the next barrier. Every process also writes into the run folder and samples the buffer files it sees there: on
a disk only one machine sees, the others would train on their own data and leave states ``--resume`` cannot
continue. Both are checked once, at start.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelerate import Accelerator
from accelerate.utils import broadcast_object_list

from amago_core.config.experiment import ExperimentConfig
from amago_core.experiment.processes import gather

SHARED_FOLDER_DOCS = "docs/tutorial/10-scale-out.md"
"""Where the requirement and the ways to meet it are explained."""
FOLDER_SETTINGS = ("run.ckpt_base_dir", "replay.dset_root")
"""Paths that may differ between machines (each may mount the shared folder elsewhere): instead of comparing
them, :func:`check_shared_folders` checks that they lead to one folder."""


class RunDisagreementError(RuntimeError):
    """The processes of one run resolved different settings or do not share its folders; the message says which."""


def agree_on_config(accelerator: Accelerator, config: ExperimentConfig) -> ExperimentConfig:
    """The config every process runs: the main process's run name, and otherwise one config for all.

    The run name is taken from the main process because a default name carries the time each process built
    its config, which may differ by a second (or, across machines, by more). The folder paths
    (:data:`FOLDER_SETTINGS`) are not compared.

    Raises:
        RunDisagreementError: another setting differs between processes (the message names it).
    """
    name = [config.run.name]
    broadcast_object_list(name)
    config = config.model_copy(update={"run": config.run.model_copy(update={"name": name[0]})})
    dumps = gather(accelerator, config.model_dump(mode="json"))
    for process, dump in enumerate(dumps[1:], start=1):
        differing = [key for key in differing_settings(dumps[0], dump) if key not in FOLDER_SETTINGS]
        if differing:
            listed = ", ".join(differing[:4]) + (
                f" and {len(differing) - 4} more" if len(differing) > 4 else ""
            )
            msg = (
                f"process {process} resolved different settings from the main process ({listed}): start every "
                "machine with the same command, config files and AMAGO_* environment variables."
            )
            raise RunDisagreementError(msg)
    return config


def differing_settings(main: Mapping[str, Any], other: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys (``schedule.epochs``) whose values differ between two dumped configs, sorted."""
    differing: list[str] = []
    for key in sorted(set(main) | set(other), key=str):
        left, right = main.get(key), other.get(key)
        if isinstance(left, Mapping) and isinstance(right, Mapping):
            differing.extend(differing_settings(left, right, f"{prefix}{key}."))
        elif left != right:
            differing.append(f"{prefix}{key}")
    return differing


def check_shared_folders(accelerator: Accelerator, folders: Sequence[Path]) -> None:
    """Checks that every process's ``folders`` are the main process's: each process writes a token file into
    each of them, and the main process looks for all of them.

    A token's name is new (a fresh nonce), so the main process's lookup reaches the file server instead of a
    cached "no such file"; every process creates the folders it writes to, so none depends on seeing a folder
    another one just made. Each process removes its tokens afterwards.

    Raises:
        RunDisagreementError: a process could not write its token, or the main process does not see one
            (the message names the process, its host and its folder).
    """
    # OS entropy, so that no seeded random stream moves.
    nonce = [secrets.token_hex(8) if accelerator.is_main_process else ""]
    broadcast_object_list(nonce)
    rank, host = accelerator.process_index, socket.gethostname()
    tokens = [Path(folder) / f".amago-shared-check-{nonce[0]}-{rank}" for folder in folders]
    written: list[Path] = []
    problem = ""
    for token in tokens:
        try:
            token.parent.mkdir(parents=True, exist_ok=True)
            token.touch()
        except OSError as exc:  # reported after the gather below: raising here would leave the others waiting
            problem = (
                f"process {rank} (host {host}) cannot write to {token.parent.resolve()} ({exc.strerror or exc}): "
                "make run.ckpt_base_dir (and replay.dset_root, if set) writable on every machine."
            )
            break
        written.append(token)
    try:
        reports = gather(accelerator, (host, [str(Path(f).resolve()) for f in folders], problem))
        if accelerator.is_main_process:
            failed_writes = [report[2] for report in reports if report[2]]
            problem = failed_writes[0] if failed_writes else _unseen(folders, nonce[0], reports)
        verdict = [problem]
        broadcast_object_list(verdict)
    finally:
        for token in written:
            with contextlib.suppress(OSError):
                token.unlink()
    if verdict[0]:
        raise RunDisagreementError(verdict[0])


def _unseen(folders: Sequence[Path], nonce: str, reports: Sequence[tuple[str, list[str], str]]) -> str:
    """What the main process misses of the other processes' tokens ("" when it sees them all)."""
    main_host, main_folders, _ = reports[0]
    for rank, (host, their_folders, _) in enumerate(reports):
        for index, folder in enumerate(folders):
            if not (Path(folder) / f".amago-shared-check-{nonce}-{rank}").is_file():
                return (
                    f"the run folder must be on a filesystem every machine shares: process {rank} (host {host}) "
                    f"writes to {their_folders[index]}, which the main process (host {main_host}) does not see "
                    f"in {main_folders[index]}. Put run.ckpt_base_dir (and replay.dset_root, if set) on a shared "
                    f"filesystem; see {SHARED_FOLDER_DOCS}."
                )
    return ""
