"""Where a run keeps its files, and writes that a crash can never leave half-done.

Layout (ARCHITECTURE §6)::

    {ckpt_base_dir}/{run_name}/
      config.resolved.json    spaces.json    metrics.jsonl    plots/*.png
      ckpts/training_states/{run_name}_epoch_{e}/   accelerate state + progress.json
      ckpts/policy_weights/policy_epoch_{e}.safetensors
      ckpts/latest/policy.safetensors
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from amago_core.io import atomic_write, atomic_write_json, atomic_write_text

__all__ = [
    "PROGRESS_FILE",
    "RunPaths",
    "atomic_write",
    "atomic_write_json",
    "atomic_write_text",
    "replace_dir",
]

PROGRESS_FILE = "progress.json"
"""Inside each training-state folder: epoch, gradient steps and frame counts to resume from."""


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
    def spaces(self) -> Path:
        """The spaces the agent was built with (``amago_core.policy`` loads the policy without building an env)."""
        return self.root / "spaces.json"

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
        """The kept training state of ``epoch`` (every ``ckpt_interval`` epochs; AMAGO's layout)."""
        return self.training_states / f"{self.run_name}_epoch_{epoch}"

    def rolling_state(self, epoch: int) -> Path:
        """The rolling training state of the newest completed epoch (older ones are removed after it is written)."""
        return self.latest_policy.parent / f"state_epoch_{epoch}"

    def policy_at(self, epoch: int) -> Path:
        return self.policy_weights / f"policy_epoch_{epoch}.safetensors"

    def make_dirs(self) -> None:
        for folder in (self.training_states, self.policy_weights, self.latest_policy.parent, self.plots):
            folder.mkdir(parents=True, exist_ok=True)

    def saved_states(self) -> list[tuple[int, Path]]:
        """``(epoch, folder)`` of every complete training state, oldest first (a kept one before a rolling one).

        Kept states are found by their ``*_epoch_{e}`` suffix, whatever run name prefixes them, so a copied or
        renamed run folder still finds its checkpoints. A state is complete once its progress file exists
        (written last).
        """
        found: list[tuple[int, int, Path]] = []
        for rank, (folder, pattern) in enumerate(
            ((self.training_states, _KEPT_STATE), (self.latest_policy.parent, _ROLLING_STATE))
        ):
            if not folder.is_dir():
                continue
            for child in folder.iterdir():
                match = pattern.match(child.name)
                if match and (child / PROGRESS_FILE).is_file():
                    found.append((int(match.group(1)), rank, child))
        return [(epoch, path) for epoch, _, path in sorted(found)]

    def saved_epochs(self) -> list[int]:
        """Epochs with a complete training state, oldest first."""
        return sorted({epoch for epoch, _ in self.saved_states()})


_KEPT_STATE = re.compile(r"^.+_epoch_(\d+)$")
_ROLLING_STATE = re.compile(r"^state_epoch_(\d+)$")


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
