"""``TensorBoardLogBackend``: amago's metrics records as TensorBoard scalars (imported only when a run uses it)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torch.utils.tensorboard import SummaryWriter

TRAIN_SECTION = "train/"
"""Records of this section are drawn against gradient steps; every other metric against epochs."""

GRADIENT_STEPS_RUN = "gradient_steps"
"""Sub-folder (a TensorBoard run) of the ``train/`` metrics; x-axis: ``gradient_steps``."""
EPOCHS_RUN = "epochs"
"""Sub-folder (a TensorBoard run) of ``val/``, ``test/``, ``dataset/`` metrics and env frames; x-axis: ``Epoch``."""

_AXIS_OF_RUN = {GRADIENT_STEPS_RUN: "gradient_steps", EPOCHS_RUN: "Epoch"}


def _number(value: Any) -> float | None:
    """The value as a float if it is a plain number (bools, strings and None are not scalars to draw)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


class TensorBoardLogBackend:
    """Writes every numeric metric of a record as a TensorBoard scalar.

    TensorBoard has one x-axis per run, so the records go to two runs under ``log_dir``: ``gradient_steps``
    (``train/`` metrics, logged every ``logging.log_interval`` updates) and ``epochs`` (everything else, once
    per epoch; ``total_frames`` is drawn there too, so env frames per epoch stay visible). Offline runs, whose
    env frames never advance, draw fine either way.

    A resumed run redoes the epochs after its checkpoint. ``rollback`` makes the first record each run gets
    afterwards open with a TensorBoard restart marker at that record's step, which hides the points the
    killed run had logged from that step on (TensorBoard's own purge), so curves never run backwards.

    Args:
        log_dir: the folder holding the two runs (``{run_dir}/tensorboard``).
        config: the run's resolved config, recorded as a text summary; None records none.
    """

    def __init__(self, log_dir: Path, config: Mapping[str, Any] | None = None):
        self.log_dir = Path(log_dir)
        self._writers: dict[str, SummaryWriter] = {}
        self._axis_steps: dict[str, int] = {}  # env-frame keys -> the epoch they were last drawn at
        self._purge_on_first_record = False
        self._config_text = None if config is None else json.dumps(config, indent=2, default=str)

    def _writer(self, run: str, step: int) -> SummaryWriter:
        writer = self._writers.get(run)
        if writer is None:
            # SummaryWriter writes its restart marker (purge_step) when it opens its event file, so each
            # run's writer is opened on that run's first record, whose step is where the redone work starts.
            purge_step = step if self._purge_on_first_record else None
            writer = SummaryWriter(str(self.log_dir / run), purge_step=purge_step)
            self._writers[run] = writer
            if run == EPOCHS_RUN and self._config_text is not None:
                # Markdown: indented lines show as a code block in TensorBoard's text tab.
                indented = "\n".join(f"    {line}" for line in self._config_text.splitlines())
                writer.add_text("config", indented, global_step=step)
        return writer

    def log(self, metrics: dict[str, Any], *, step: int) -> None:
        """Adds the record's scalars; ``step`` (amago's record count) is used only when an x-axis is missing."""
        by_run: dict[str, list[tuple[str, float]]] = {}
        for key, value in metrics.items():
            number = _number(value)
            if number is None or key in _AXIS_OF_RUN.values():
                continue
            run = GRADIENT_STEPS_RUN if key.startswith(TRAIN_SECTION) else EPOCHS_RUN
            by_run.setdefault(run, []).append((key, number))
        for run, scalars in by_run.items():
            run_step = self._step_of(run, metrics, step)
            writer = self._writer(run, run_step)
            for tag, number in scalars:
                if "/" not in tag:  # env frames ride on every record: draw them once per epoch
                    if self._axis_steps.get(tag) == run_step:
                        continue
                    self._axis_steps[tag] = run_step
                writer.add_scalar(tag, number, global_step=run_step)
            # One flush per record (records come seconds apart): a killed run keeps what it logged.
            writer.flush()

    @staticmethod
    def _step_of(run: str, metrics: Mapping[str, Any], record_step: int) -> int:
        axis_value = _number(metrics.get(_AXIS_OF_RUN[run]))
        return record_step if axis_value is None or not math.isfinite(axis_value) else int(axis_value)

    def rollback(self, *, after_epoch: int) -> None:
        """Hides what a killed run logged after ``after_epoch``, from the first records of the redone work on."""
        self.close()
        self._axis_steps = {}
        self._purge_on_first_record = True

    def close(self) -> None:
        """Flushes and closes the event files (the next record opens new ones)."""
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
