"""``RunReports``: what a running experiment reports, and to whom.

Every record goes to the log backends with the counters' x-axes; the epoch's records are kept for its progress
display and ``amago_on_epoch_end``. The hooks receive the experiment's narrow view (``amago_core.hooks.RunView``),
never the experiment.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from amago_core.config.experiment import ExperimentConfig
from amago_core.experiment.counters import RunCounters
from amago_core.experiment.logger import RunLogger
from amago_core.experiment.metrics import AVERAGE_RETURN_KEY
from amago_core.experiment.progress import EpochReport, RunProgress, frames_target
from amago_core.hooks.manager import hook_manager
from amago_core.hooks.specs import RunView


class RunReports:
    """Logs a run's records and calls the experiment hooks.

    Args:
        counters: the run's counters (every record's x-axes).
        view: what the hooks receive of the experiment.
        evaluation_only: the experiment only evaluates (its records carry no training clock unless restored).
    """

    def __init__(self, counters: RunCounters, view: RunView, *, evaluation_only: bool) -> None:
        self._counters = counters
        self._view = view
        self._evaluation_only = evaluation_only
        self._logger: RunLogger | None = None
        self._epoch_metrics: dict[str, Any] = {}
        self._best_val: tuple[float, int] | None = None
        self._display: RunProgress | None = None
        self._write_failed = False

    @property
    def logger(self) -> RunLogger | None:
        """The log backends (None before :meth:`open`)."""
        return self._logger

    @property
    def best_val(self) -> tuple[float, int] | None:
        """The best val average return of this session and its epoch, among validations after the first gradient
        update (None before one)."""
        return self._best_val

    @property
    def displaying(self) -> bool:
        """Whether ``learn()``'s progress display runs (main process, verbose), which shows each epoch's table."""
        return self._display is not None

    def start_display(self, config: ExperimentConfig, *, processes: int, collects: bool) -> None:
        """``learn()`` begins (main process, verbose): the whole-run progress display counts from here."""
        counters = self._counters
        self._display = RunProgress(
            epochs=config.schedule.epochs,
            first_epoch=counters.epoch,
            frames_target=frames_target(config, processes=processes, collects=collects),
            frames_at_start=counters.total_frames,
            updates_at_start=counters.grad_update_counter,
        )

    def stop_display(self) -> None:
        """``learn()`` ended: the display closes (its last state stays on screen)."""
        if self._display is not None:
            self._display.close()
            self._display = None

    def open(self, run_dir: Path, record: dict[str, Any], *, enabled: bool) -> None:
        """Opens the log backends the hooks contribute (``enabled``: this process logs)."""
        self._logger = RunLogger(run_dir, record, enabled=enabled)

    def x_axes(self) -> dict[str, Any]:
        """The x-axes attached to every record (:meth:`RunCounters.x_axes`)."""
        return self._counters.x_axes(evaluation_only=self._evaluation_only)

    def log(self, metrics: Mapping[str, Any], section: str) -> dict[str, Any]:
        """Logs ``metrics`` under ``section`` with the current x-axes; returns the record ({} before open)."""
        return {} if self._logger is None else self._logger.log(metrics, section, self.x_axes())

    def keep(self, metrics: Mapping[str, Any], section: str) -> None:
        """Logs ``metrics`` and keeps them for the epoch's report and hooks (``{section}/{key}``)."""
        self.log(metrics, section)
        self._epoch_metrics.update({f"{section}/{k}": v for k, v in metrics.items()})

    def started(self) -> None:
        """``start()`` built a training run (main process): the hooks hear of it (not of ``amago eval``'s)."""
        if not self._evaluation_only:
            hook_manager().hook.amago_on_start(experiment=self._view)

    def evaluated(self, split: str, metrics: dict[str, float]) -> None:
        """An evaluation of ``split`` (``val``, ``test``...) gave ``metrics``: kept, and handed to the hooks."""
        self.keep(metrics, split)
        value, epoch = metrics.get(AVERAGE_RETURN_KEY), self._counters.epoch
        # The untrained policy's return is no result of training: a best val counts after the first update.
        trained = self._counters.grad_update_counter > 0
        if (
            split == "val"
            and value is not None
            and trained
            and (self._best_val is None or value > self._best_val[0])
        ):
            self._best_val = (float(value), epoch)
        hook_manager().hook.amago_on_evaluation(experiment=self._view, split=split, metrics=metrics)

    def files(self, kind: str, paths: Sequence[Path], section: str) -> None:
        """Sends files of one ``kind`` (``videos``) to the backends that take them (:meth:`RunLogger.log_files`)."""
        if self._logger is not None:
            self._logger.log_files(kind, paths, section, self.x_axes())

    def new_epoch(self) -> None:
        """An epoch begins: its records start empty."""
        self._epoch_metrics = {}

    def epoch_ended(self, epoch: int) -> None:
        """Calls every plugin's ``amago_on_epoch_end`` with the epoch's records and x-axes, then shows the epoch."""
        metrics = {**self._epoch_metrics, **self.x_axes()}
        hook_manager().hook.amago_on_epoch_end(experiment=self._view, epoch=epoch, metrics=metrics)
        if self._display is not None:
            counters = self._counters
            report = EpochReport(
                epoch, counters.total_frames, counters.grad_update_counter, self._epoch_metrics
            )
            self._display.epoch_done(report)

    def checkpointed(self, epoch: int, path: Path) -> None:
        """Calls every plugin's ``amago_on_checkpoint`` for the training state saved at ``path``."""
        hook_manager().hook.amago_on_checkpoint(experiment=self._view, epoch=epoch, path=path)

    def note_write_failure(self) -> None:
        """A write into the run folder failed: :meth:`close` then tolerates the metrics file's last flush failing."""
        self._write_failed = True

    def close(self) -> None:
        """Closes the log backends. After a failed write the disk may refuse the metrics file's last flush too;
        that failure is already being reported, and a second error here would replace it."""
        if self._logger is not None:
            with contextlib.suppress(OSError) if self._write_failed else contextlib.nullcontext():
                self._logger.close()
