"""``RunLogger``: sends metrics records to every log backend the hooks contribute (JSONL always; amago-wandb's
when ``logging.log_to_wandb``).

Files (amago-tools' videos) go only to backends with a ``log_{kind}(key, paths, *, x_axes)`` method (amago-wandb's
``log_videos``); the files themselves stay in the run folder, which is the local record.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from amago_core.hooks.manager import hook_manager
from amago_core.hooks.specs import LogBackend


def _scalar(value: Any) -> Any:
    """Plain python scalars for the backends; tensors and arrays with one element become floats."""
    if hasattr(value, "numel") and callable(value.numel):  # torch tensors, without importing torch here
        return float(value.detach().cpu().item()) if value.numel() == 1 else None
    if hasattr(value, "item") and getattr(value, "size", 2) == 1:
        return value.item()
    return value


WANDB_BACKEND = "amago-wandb"
"""The distribution whose hook logs a run to wandb (``logging.log_to_wandb``)."""


def backends_of(answers: Iterable[Any]) -> list[LogBackend]:
    """The backends in hook answers, each a backend, a list of them, or None (a plugin staying out)."""
    return [
        b
        for answer in answers
        if answer is not None
        for b in (answer if isinstance(answer, list | tuple) else [answer])
    ]


def wandb_backend_installed() -> bool:
    """Whether the distribution that logs runs to wandb is installed (its hook does the logging)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version(WANDB_BACKEND)
    except PackageNotFoundError:
        return False
    return True


def _refuse_wandb_without_its_backend(config: Mapping[str, Any]) -> None:
    """A run that asks for wandb while no backend can log it stops before its first record, in one line."""
    from amago_core.optional import MissingOptionalDependencyError

    if config.get("logging", {}).get("log_to_wandb") and not wandb_backend_installed():
        msg = (
            f"logging.log_to_wandb is true but {WANDB_BACKEND} is not installed: pip install {WANDB_BACKEND}, or "
            "set logging.log_to_wandb=false."
        )
        raise MissingOptionalDependencyError(msg, name="wandb")


class RunLogger:
    """One per run. Only the main process logs (``enabled``); the others hold a logger with no backends.

    ``config`` is the resolved config as a JSON-safe dict (backends may record it).
    """

    def __init__(self, run_dir: Path, config: dict[str, Any], *, enabled: bool = True):
        self.backends: list[LogBackend] = []
        if enabled:
            manager = hook_manager()
            manager.check()
            _refuse_wandb_without_its_backend(config)
            self.backends = backends_of(manager.hook.amago_log_backends(run_dir=Path(run_dir), config=config))
        self.step = 0
        """Records logged so far (a resumed run continues the count)."""

    def log(self, metrics: Mapping[str, Any], section: str, x_axes: Mapping[str, Any]) -> dict[str, Any]:
        """Logs ``{section}/{key}`` for every metric, plus the x-axes, as one record; returns the record."""
        record: dict[str, Any] = {}
        for key, value in metrics.items():
            scalar = _scalar(value)
            if scalar is None or (isinstance(scalar, float) and math.isnan(scalar) and key.startswith("_")):
                continue
            record[f"{section}/{key}"] = scalar
        record.update(x_axes)
        self.step += 1
        for backend in self.backends:
            backend.log(record, step=self.step)
        return record

    def attach(self, backend: LogBackend) -> None:
        """Adds a backend after start-up (``amago eval`` adds the training run's resumed wandb run)."""
        self.backends.append(backend)

    def log_files(self, kind: str, paths: Sequence[Path], section: str, x_axes: Mapping[str, Any]) -> None:
        """Sends files of one ``kind`` as ``{section}/{kind}`` (with the x-axes) to every backend with a
        ``log_{kind}(key, paths, *, x_axes)`` method (``videos``: amago-wandb's ``log_videos``)."""
        for backend in self.backends:
            log = getattr(backend, f"log_{kind}", None)
            if callable(log):
                log(f"{section}/{kind}", list(paths), x_axes=dict(x_axes))

    def rollback(self, after_epoch: int) -> None:
        """Tells each backend that can take records back to drop those of epochs after ``after_epoch``.

        A resumed run redoes the epochs after its checkpoint; their first records would make curves run
        backwards. Backends without ``rollback`` (wandb: its history is append-only) keep them.
        """
        for backend in self.backends:
            rollback = getattr(backend, "rollback", None)
            if callable(rollback):
                rollback(after_epoch=after_epoch)

    def close(self) -> None:
        for backend in self.backends:
            backend.close()
        self.backends = []
