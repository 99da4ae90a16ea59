"""Checkpoint I/O: policy weights, training states and the progress record, in formats that run no code on load.

A training state folder holds the model (``model.safetensors``), the optimiser, LR schedule and gradient scaler
(``*.json`` + ``*.safetensors``), each process's random states (``rng_{i}.*``) and ``progress.json``, written
last: a folder without it is incomplete and never loaded. Nothing here unpickles (a run folder may come from
anyone), so accelerate's ``save_state``/``load_state`` (pickle files) are not used.

A state is filled under a hidden name and renamed into place once complete. A write that fails removes its own
partial files, leaves every earlier checkpoint as it was, and is raised in every process as an ``OSError`` naming
the target. Every write and delete is checked to stay in the run folder through no symlink (``RunPaths.check``).
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_model

from amago_core import file_format
from amago_core.experiment.processes import gather
from amago_core.experiment.run_dir import (
    PROGRESS_FILE,
    RunPaths,
    atomic_write,
    atomic_write_json,
    kept_epochs,
    os_error_code,
)
from amago_core.experiment.safe_state import DamagedStateError, load_state, read_state_json, save_state
from amago_core.file_format import RefusedStateError, migrated

MODEL_FILE = "model.safetensors"
PICKLE_SUFFIXES = (".pkl", ".bin", ".pt", ".pth", ".pickle")
"""Files that hold pickles: a folder with them (and without amago's own files) is refused, never loaded."""


@dataclass
class Progress:
    """How far a run got: what a training state needs besides the model, optimiser and random states.

    Attributes:
        epoch: the epoch the state was saved after (a resumed run continues with the next one).
        grad_update_counter: optimiser updates so far.
        total_frames: env steps collected so far, over every process.
        frames_by_env_name: env steps so far per env name.
        num_processes: data-parallel processes of the run that saved it.
        logger_step: records logged so far (the log backends' step counter).
        wall_seconds: seconds :meth:`~amago_core.experiment.Experiment.learn` has run up to this state, summed
            over the sessions of a resumed run (the records' ``wall_time_seconds``).
    """

    epoch: int = 0
    grad_update_counter: int = 0
    total_frames: int = 0
    frames_by_env_name: dict[str, int] = field(default_factory=dict)
    num_processes: int = 1
    logger_step: int = 0
    wall_seconds: float = 0.0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Progress:
        """Reads a ``progress.json`` record (older records lack the newer fields)."""
        return cls(
            epoch=int(data["epoch"]),
            grad_update_counter=int(data["grad_update_counter"]),
            total_frames=int(data["total_frames"]),
            frames_by_env_name={str(k): int(v) for k, v in dict(data["frames_by_env_name"]).items()},
            num_processes=int(data.get("num_processes", 1)),
            logger_step=int(data.get("logger_step", 0)),
            wall_seconds=float(data.get("wall_seconds", 0.0)),
        )


@contextmanager
def os_errors_of_safetensors() -> Iterator[None]:
    """Re-raises safetensors' failed writes as the ``OSError`` they are (it reports ``No space left on device``
    as a ``SafetensorError`` whose text alone holds the code); other safetensors errors pass unchanged."""
    try:
        yield
    except SafetensorError as exc:
        code = os_error_code(str(exc))
        if code is None:
            raise
        raise OSError(code, os.strerror(code)) from exc


def save_policy_weights(policy: torch.nn.Module, path: Path, *, root: Path | None = None) -> None:
    """Writes ``policy``'s state (parameters and buffers: PopArt stats, input norms, targets) atomically.

    ``safetensors.torch.save_model`` de-duplicates shared tensors, which a plain ``save_file`` refuses.

    Args:
        root: the folder ``path`` must stay in, through no symlink (a run folder); None: no check.

    Raises:
        OSError: the write failed (the file at ``path``, if any, is left as it was); ``UnsafePathError`` when
            ``path`` leaves ``root``.
    """
    with os_errors_of_safetensors():
        atomic_write(Path(path), lambda tmp: _save_weights(policy, tmp), root=root)


def _save_weights(policy: torch.nn.Module, path: Path) -> None:
    save_model(policy, str(path), metadata={"format": str(file_format.FORMAT)})


def load_policy_weights(policy: torch.nn.Module, path: Path, retries: int = 1) -> None:
    """Loads weights saved by :func:`save_policy_weights` (strict: every key must match; older formats migrated).

    Args:
        path: the ``.safetensors`` file (nothing else is read: no pickles).
        retries: attempts, one second apart (a collector may read while the learner replaces the file; the
            write is atomic, so a retry only covers the file briefly missing on some filesystems).

    Raises:
        FileNotFoundError: no file after the retries.
        RefusedStateError: a format newer than this amago's.
        RuntimeError: the file does not match this agent (with the missing/unexpected keys).
    """
    path = Path(path)
    for attempt in range(max(retries, 1)):
        if path.is_file():
            break
        if attempt + 1 < retries:
            time.sleep(1.0)
    else:
        msg = f"policy weights {path} not found"
        raise FileNotFoundError(msg)
    with safe_open(str(path), framework="pt") as file:
        metadata, tensors = file.metadata() or {}, {name: file.get_tensor(name) for name in file.keys()}  # noqa: SIM118
    # save_model leaves out the aliases of shared tensors and names them in the metadata (alias -> kept name).
    tensors |= {a: tensors[k] for a, k in metadata.items() if a != "format" and k in tensors}
    found = int(metadata.get("format", 0))
    missing, unexpected = policy.load_state_dict(migrated("weights", tensors, found, path), strict=False)
    if missing or unexpected:
        msg = (
            f"{path} does not match this agent: missing {sorted(missing)[:8]}, unexpected {sorted(unexpected)[:8]}. "
            "Was it saved with a different agent or encoder config?"
        )
        raise RuntimeError(msg)


def write_progress(folder: Path, progress: dict[str, Any]) -> None:
    """Writes the progress record into a training-state folder (its presence marks the folder complete)."""
    atomic_write_json(Path(folder) / PROGRESS_FILE, progress)


def read_progress(folder: Path) -> dict[str, Any]:
    """Reads a training-state folder's progress record, migrated to this amago's format (a newer one refused);
    one that is not JSON, or nests too deep, raises DamagedStateError naming the file."""
    file = Path(folder) / PROGRESS_FILE
    if not file.is_file():
        msg = f"{folder} is not a complete amago training state (no {PROGRESS_FILE}); pick another epoch"
        raise FileNotFoundError(msg)
    record = read_state_json(file)
    return migrated("progress", record, int(record["format"]) if "format" in record else 0, file)


def random_states(dataset_rng: np.random.Generator | None) -> dict[str, Any]:
    """This process's random states: python, numpy, torch (CPU and CUDA), and the dataset's sampler."""
    states: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    if dataset_rng is not None:
        states["dataset"] = dataset_rng.bit_generator.state
    return states


def restore_random_states(states: dict[str, Any], dataset_rng: np.random.Generator | None) -> None:
    """Puts back what :func:`random_states` recorded (CUDA states only where CUDA is available)."""
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])
    if "dataset" in states and dataset_rng is not None:
        dataset_rng.bit_generator.state = states["dataset"]


@dataclass
class TrainingState:
    """A training state read from disk and checked, before anything of it is applied.

    Attributes:
        folder: where it was read from.
        progress: its progress record.
        optimizer: the optimiser's state dict.
        scheduler: the LR schedule's state dict.
        scaler: the gradient scaler's state dict (fp16 runs), if saved.
        rng: this process's random states (None when the saving run had fewer processes).
    """

    folder: Path
    progress: Progress
    optimizer: dict[str, Any]
    scheduler: dict[str, Any]
    scaler: dict[str, Any] | None
    rng: dict[str, Any] | None


def _refuse_foreign(folder: Path) -> None:
    pickles = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickles and not (folder / "optimizer.json").is_file():
        msg = (
            f"{folder} holds pickle files ({', '.join(pickles[:4])}), which amago never loads: unpickling runs "
            "code from the run folder. Its policy weights (.safetensors) still load, e.g. with `amago eval`."
        )
        raise RefusedStateError(msg)


def loadable(folder: Path) -> bool:
    """Whether a training-state folder looks loadable, cheaply (its files are not read): amago's own files, a
    readable progress record of a layout this amago reads, no pickles. Retention counts only such states, so a
    planted or damaged folder never pushes a state a resume could use out of the newest kept."""
    try:
        _refuse_foreign(folder)
        Progress.from_json(read_progress(folder))
    except (OSError, ValueError, KeyError, TypeError):  # RefusedStateError is a ValueError
        return False
    required = (MODEL_FILE, "optimizer.json", "scheduler.json")
    return all((folder / name).is_file() for name in required)


def read_training_state(folder: Path, process_index: int) -> TrainingState:
    """Reads and checks every file of a training state; nothing is unpickled and nothing is applied yet.

    Raises:
        RefusedStateError: a folder of pickles, or a layout newer than this amago.
        DamagedStateError: a file is missing, cut short or unreadable (the message names it).
    """
    folder = Path(folder)
    _refuse_foreign(folder)
    try:
        progress = Progress.from_json(read_progress(folder))
    except (RefusedStateError, DamagedStateError):
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        msg = f"{folder / PROGRESS_FILE} cannot be read ({type(exc).__name__}: {exc})"
        raise DamagedStateError(msg) from exc
    try:
        with safe_open(str(folder / MODEL_FILE), framework="pt") as model_file:
            model_file.keys()  # reads and checks the header; the tensors load when applied
    except (OSError, SafetensorError) as exc:
        msg = f"{folder / MODEL_FILE} cannot be read ({type(exc).__name__}: {exc})"
        raise DamagedStateError(msg) from exc
    rng_file = folder / f"rng_{process_index}.json"
    return TrainingState(
        folder=folder,
        progress=progress,
        optimizer=load_state(folder, "optimizer"),
        scheduler=load_state(folder, "scheduler"),
        scaler=load_state(folder, "grad_scaler") if (folder / "grad_scaler.json").is_file() else None,
        rng=load_state(folder, f"rng_{process_index}") if rng_file.is_file() else None,
    )


class CheckpointStore:
    """Writes and reads one run's training states and policy weights (``accelerator``: the processes, the
    gradient scaler, barriers)."""

    def __init__(self, accelerator: Accelerator, paths: RunPaths):
        self.accelerator, self.paths = accelerator, paths

    def save(
        self,
        target: Path,
        *,
        policy: torch.nn.Module,
        optimizer: Any,
        scheduler: Any,
        progress: Progress,
        dataset_rng: np.random.Generator | None,
    ) -> Path:
        """Writes a complete training state to ``target`` (under a temp name, renamed into place when complete).

        Raises:
            OSError: a write failed in some process (raised in every process, ``filename`` = ``target``). The
                partial folder is removed; earlier states, and a state already at ``target``, stay as they were.
        """
        accelerator, main = self.accelerator, self.accelerator.is_main_process
        incoming = target.with_name(f".{target.name}.incoming")

        def make_incoming() -> None:
            # Checked here, in the phase every process agrees on: a refusal stops all of them, none waits.
            self.paths.check(target)
            shutil.rmtree(self.paths.check(incoming), ignore_errors=True)
            incoming.mkdir(parents=True)

        def write_main_files() -> None:
            _save_weights(policy, incoming / MODEL_FILE)
            save_state(optimizer.state_dict(), incoming, "optimizer")
            save_state(scheduler.state_dict(), incoming, "scheduler")
            if accelerator.scaler is not None:
                save_state(accelerator.scaler.state_dict(), incoming, "grad_scaler")
            write_progress(
                incoming, {**asdict(progress), "format": file_format.FORMAT}
            )  # last: the folder is complete
            _move_into_place(incoming, target)

        def write_rng() -> None:  # every process writes its own
            save_state(
                random_states(dataset_rng), self.paths.check(incoming), f"rng_{accelerator.process_index}"
            )

        def remove_incoming() -> None:
            shutil.rmtree(incoming, ignore_errors=True)  # frees what the failed write took

        # Each phase ends with every process learning whether any failed (the barrier the phases need anyway),
        # so a failure in one process never leaves the others waiting at a barrier it will not reach.
        for phase in (make_incoming, write_rng, write_main_files):
            self._agree(_attempt(phase) if main or phase is write_rng else None, target, remove_incoming)
        return target

    def write_on_main(self, path: Path, write: Callable[[], None]) -> None:
        """Runs ``write`` (a write of ``path``) on the main process; a failure there is raised in every process.

        Raises:
            OSError: the write failed (``filename`` = ``path``).
        """
        self._agree(_attempt(write) if self.accelerator.is_main_process else None, path, None)

    def _agree(self, failure: OSError | None, path: Path, clean_up: Callable[[], None] | None) -> None:
        """Shares each process's write failure (or None) with every process; raises the first one everywhere."""
        failures = [f for f in gather(self.accelerator, failure) if f is not None]
        if not failures:
            return
        if clean_up is not None and self.accelerator.is_main_process:
            clean_up()
        first = failures[0]
        error = OSError(first.errno, first.strerror or str(first), str(path))
        if failure is not None:
            raise error from failure
        raise error

    def prune_states(self, newest: int, every: int | None) -> list[Path]:
        """Removes the kept training states a retention rule drops (main process; after the newest is complete).

        Only states amago can load count (:func:`loadable`), by the epoch their progress file records: any other
        folder is left alone and never pushes a loadable one out; the newest loadable state is always kept.
        Hidden folders of saves that a kill cut short (``.*.incoming``, ``.*.replaced``) go too: only this
        process writes them, and its save has finished.

        Args:
            newest: keep the newest N complete states (``schedule.keep_states``).
            every: also keep every epoch that is a multiple of it (``schedule.keep_state_every``).

        Returns:
            The removed folders.

        Raises:
            UnsafePathError: the states folder is a symlink (or lies behind one); nothing is removed.
        """
        if not self.accelerator.is_main_process:
            return []
        folder = self.paths.check(self.paths.training_states)
        states = [
            (epoch, path)
            for epoch, path in self.paths.saved_states()
            if path.parent == folder and loadable(path)
        ]
        keep = kept_epochs((epoch for epoch, _ in states), newest, every)
        removed = [path for epoch, path in states if epoch not in keep]
        removed += _stale_save_folders(folder)
        for path in removed:
            shutil.rmtree(self.paths.check(path), ignore_errors=True)
        return removed

    def prune_policies(self, newest: int | None, every: int | None) -> list[Path]:
        """Removes the policy weights a retention rule drops (main process; after the newest is written).

        Args:
            newest: keep the newest N files (``schedule.keep_policies``; None: all).
            every: also keep every epoch that is a multiple of it (``schedule.keep_policy_every``).

        Returns:
            The removed files (with temp files a killed write left behind).

        Raises:
            UnsafePathError: the weights folder is a symlink (or lies behind one); nothing is removed.
        """
        if not self.accelerator.is_main_process:
            return []
        self.paths.check(self.paths.policy_weights)
        policies = self.paths.saved_policies()
        keep = kept_epochs((epoch for epoch, _ in policies), newest, every)
        removed = [path for epoch, path in policies if epoch not in keep]
        if self.paths.policy_weights.is_dir():
            removed += list(self.paths.policy_weights.glob(".policy_epoch_*.tmp"))
        for path in removed:
            self.paths.check(path).unlink(missing_ok=True)
        return removed

    def prune_rolling(self, keep: Path) -> None:
        """Removes the rolling states older than ``keep`` (after ``keep`` is complete; main process), and hidden
        folders of rolling saves a kill cut short."""
        if not self.accelerator.is_main_process:
            return
        self.paths.check(keep.parent)
        for _, folder in self.paths.saved_states():
            if folder.parent == keep.parent and folder != keep and folder.name.startswith("state_epoch_"):
                shutil.rmtree(self.paths.check(folder), ignore_errors=True)
        for stale in _stale_save_folders(keep.parent):
            shutil.rmtree(self.paths.check(stale), ignore_errors=True)


def _attempt(write: Callable[[], None]) -> OSError | None:
    """Runs ``write``; returns the OSError it failed with (safetensors' included), or None."""
    try:
        with os_errors_of_safetensors():
            write()
    except OSError as exc:
        return exc
    return None


def _stale_save_folders(folder: Path) -> list[Path]:
    """Hidden folders that :meth:`CheckpointStore.save` leaves only when killed mid-save."""
    if not folder.is_dir():
        return []
    return [
        path for pattern in (".*.incoming", ".*.replaced") for path in folder.glob(pattern) if path.is_dir()
    ]


def _move_into_place(complete: Path, target: Path) -> None:
    """Renames the complete folder ``complete`` to ``target``, replacing a state already there (the same epoch
    saved again by a resumed run) only once the new one is in place."""
    if not target.exists():
        complete.rename(target)
        return
    old = target.with_name(f".{target.name}.replaced")
    shutil.rmtree(old, ignore_errors=True)
    target.rename(old)
    try:
        complete.rename(target)
    except OSError:
        old.rename(target)  # put the previous state back
        raise
    shutil.rmtree(old, ignore_errors=True)
