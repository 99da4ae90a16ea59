"""Checkpoint I/O: policy weights as safetensors, accelerate training states, and the progress record.

A training-state folder is complete once its ``progress.json`` exists: it is written last, into a folder that
is swapped in whole (see :func:`~amago_core.experiment.run_dir.replace_dir`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from safetensors.torch import load_model, save_model

from amago_core.experiment.run_dir import (
    PROGRESS_FILE,
    RunPaths,
    atomic_write,
    atomic_write_json,
    replace_dir,
)


@dataclass
class Progress:
    """How far a run got: what a training state needs besides the model, optimiser and RNG states.

    Attributes:
        epoch: the epoch the state was saved after (on resume, the loop continues with the next one).
        grad_update_counter: optimiser updates so far.
        total_frames: env steps collected so far, over every process.
        frames_by_env_name: env steps so far per env name.
    """

    epoch: int = 0
    grad_update_counter: int = 0
    total_frames: int = 0
    frames_by_env_name: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Progress:
        return cls(
            epoch=int(data["epoch"]),
            grad_update_counter=int(data["grad_update_counter"]),
            total_frames=int(data["total_frames"]),
            frames_by_env_name={str(k): int(v) for k, v in dict(data["frames_by_env_name"]).items()},
        )


def save_policy_weights(policy: torch.nn.Module, path: Path) -> None:
    """Writes ``policy``'s state (parameters and buffers: PopArt stats, input norms, targets) atomically.

    ``safetensors.torch.save_model`` de-duplicates shared tensors, which a plain ``save_file`` refuses.
    """
    atomic_write(Path(path), lambda tmp: save_model(policy, str(tmp)))


def load_policy_weights(policy: torch.nn.Module, path: Path, retries: int = 1) -> None:
    """Loads weights saved by :func:`save_policy_weights` (strict: every key must match).

    Args:
        policy: the agent to load into.
        path: the ``.safetensors`` file.
        retries: attempts, one second apart (a collector may read while the learner replaces the file; the
            write is atomic, so a retry only covers the file briefly missing on some filesystems).

    Raises:
        FileNotFoundError: no file after the retries.
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
    missing, unexpected = load_model(policy, str(path), strict=False)
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
    """Reads a training-state folder's progress record."""
    file = Path(folder) / PROGRESS_FILE
    if not file.is_file():
        msg = f"{folder} is not a complete amago training state (no {PROGRESS_FILE}); pick another epoch"
        raise FileNotFoundError(msg)
    return json.loads(file.read_text(encoding="utf-8"))


class CheckpointStore:
    """Reads and writes one run's checkpoints.

    Args:
        accelerator: the run's accelerator (its state holds the model, optimiser, scheduler and RNG states).
        paths: the run's folders.
    """

    def __init__(self, accelerator: Accelerator, paths: RunPaths):
        self.accelerator = accelerator
        self.paths = paths

    def save(self, policy: torch.nn.Module, progress: Progress) -> Path:
        """Saves the full training state and the policy weights of ``progress.epoch``; returns the state folder."""
        target = self.paths.training_state(progress.epoch)
        if self.accelerator.is_main_process:
            # accelerate writes every process's RNG state from the main process's call in single-node runs;
            # the folder is filled under a temp name, then swapped in, so a crash never leaves half of one.
            def fill(tmp: Path) -> None:
                self.accelerator.save_state(str(tmp), safe_serialization=True)
                write_progress(tmp, asdict(progress))

            replace_dir(target, fill)
            save_policy_weights(policy, self.paths.policy_at(progress.epoch))
        self.accelerator.wait_for_everyone()
        return target

    def load_training_state(self, path: Path) -> Progress:
        """Loads a training-state folder into the prepared objects; returns its progress record.

        Raises:
            FileNotFoundError: no such folder, or it is incomplete.
        """
        if not Path(path).exists():
            msg = f"no checkpoint at {path}; `amago run --resume` picks the newest complete one"
            raise FileNotFoundError(msg)
        progress = Progress.from_json(read_progress(path))
        self.accelerator.load_state(str(path))
        return progress

    def newest_epoch(self) -> int | None:
        """The newest epoch with a complete training state (None when there is none)."""
        epochs = self.paths.saved_epochs()
        return epochs[-1] if epochs else None

    def write_latest(self, policy: torch.nn.Module) -> None:
        """Writes the current weights to ``ckpts/latest`` (main process; what collect-only processes read)."""
        if self.accelerator.is_main_process:
            save_policy_weights(policy, self.paths.latest_policy)

    def read_latest(self, policy: torch.nn.Module) -> bool:
        """Loads ``ckpts/latest`` if it exists; returns whether it did."""
        if not self.paths.latest_policy.is_file():
            return False
        load_policy_weights(policy, self.paths.latest_policy, retries=10)
        return True
