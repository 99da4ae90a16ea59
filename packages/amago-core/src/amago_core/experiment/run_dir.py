"""Where a run keeps its files, and writes that a crash can never leave half-done.

Layout (ARCHITECTURE §6)::

    {ckpt_base_dir}/{run_name}/
      config.resolved.json    metrics.jsonl    plots/*.png
      ckpts/training_states/{run_name}_epoch_{e}/   accelerate state + progress.json
      ckpts/policy_weights/policy_epoch_{e}.safetensors
      ckpts/latest/policy.safetensors
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROGRESS_FILE = "progress.json"
"""Inside each training-state folder: epoch, gradient steps and frame counts to resume from."""


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


@dataclass(frozen=True)
class RunPaths:
    """The files and folders of one run."""

    base: Path
    run_name: str

    @property
    def root(self) -> Path:
        return self.base / self.run_name

    @property
    def config(self) -> Path:
        return self.root / "config.resolved.json"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.jsonl"

    @property
    def plots(self) -> Path:
        return self.root / "plots"

    @property
    def ckpts(self) -> Path:
        return self.root / "ckpts"

    @property
    def training_states(self) -> Path:
        return self.ckpts / "training_states"

    @property
    def policy_weights(self) -> Path:
        return self.ckpts / "policy_weights"

    @property
    def latest_policy(self) -> Path:
        return self.ckpts / "latest" / "policy.safetensors"

    def training_state(self, epoch: int) -> Path:
        return self.training_states / f"{self.run_name}_epoch_{epoch}"

    def policy_at(self, epoch: int) -> Path:
        return self.policy_weights / f"policy_epoch_{epoch}.safetensors"

    def make_dirs(self) -> None:
        for folder in (self.training_states, self.policy_weights, self.latest_policy.parent, self.plots):
            folder.mkdir(parents=True, exist_ok=True)

    def saved_epochs(self) -> list[int]:
        """Epochs with a complete training state (its progress file is written last), oldest first."""
        pattern = re.compile(rf"^{re.escape(self.run_name)}_epoch_(\d+)$")
        epochs = []
        if self.training_states.is_dir():
            for child in self.training_states.iterdir():
                match = pattern.match(child.name)
                if match and (child / PROGRESS_FILE).is_file():
                    epochs.append(int(match.group(1)))
        return sorted(epochs)


def replace_dir(target: Path, fill: Callable[[Path], None]) -> None:
    """Fills a fresh temp folder with ``fill(tmp)``, then swaps it in for ``target``.

    A crash leaves either the old folder or the new one complete (plus a stray temp folder that later calls
    clean up), because the swap is a rename.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        fill(tmp)
        if target.exists():
            old = target.with_name(f".{target.name}.old.tmp")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
