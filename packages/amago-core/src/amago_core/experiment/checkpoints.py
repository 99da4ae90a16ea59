"""Policy weights as safetensors, and the progress record that makes a training state resumable."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_model, save_model

from amago_core.experiment.run_dir import PROGRESS_FILE, atomic_write, atomic_write_json


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
