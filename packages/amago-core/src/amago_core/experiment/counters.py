"""``RunCounters``: how far a run got and its training clock (``experiment.counters``).

They change only through this object's methods, called by the loop that owns it, and are restored in one place
(:meth:`restore`, from a training state's :class:`~amago_core.experiment.checkpoints.Progress`); everything else
reads them.
"""

from __future__ import annotations

import time
from typing import Any

from amago_core.experiment.checkpoints import Progress
from amago_core.experiment.metrics import WALL_TIME_KEY


def read_only(part: str, name: str, doc: str) -> Any:
    """A read-only attribute of the experiment that reads ``name`` of its ``part`` (``epoch``: the counters'),
    None while that part is not built."""

    def read(owner: Any) -> Any:
        holder = getattr(owner, part)
        return None if holder is None else getattr(holder, name)

    return property(read, doc=doc)


class RunCounters:
    """The progress counters and the training clock of one run (all zero for a new run)."""

    def __init__(self) -> None:
        self._epoch = 0
        self._updates = 0
        self._frames = 0
        self._frames_by_env_name: dict[str, int] = {}
        self._seconds_done = 0.0
        """Seconds ``learn()`` ran before its current call: earlier calls, and the sessions before a resume."""
        self._clock_since: float | None = None
        """When the training clock last (re)started (``time.monotonic``); None outside ``learn()``."""
        self._learn_began: float | None = None
        self._learn_seconds: float | None = None
        self._learn_start_counts = (0, 0)

    @property
    def epoch(self) -> int:
        """The epoch running (or just finished); after :meth:`restore` with ``next_epoch``, the next to run."""
        return self._epoch

    @property
    def grad_update_counter(self) -> int:
        """Optimiser updates so far."""
        return self._updates

    @property
    def total_frames(self) -> int:
        """Env steps collected so far, over every process."""
        return self._frames

    @property
    def frames_by_env_name(self) -> dict[str, int]:
        """Env steps so far by env name (a copy)."""
        return dict(self._frames_by_env_name)

    @property
    def training_wall_seconds(self) -> float:
        """Seconds ``learn()`` has run over the whole run, resumes included (the records' wall time).

        Only the training loop counts (with the evaluations inside it), not building envs or the test pass. Work
        redone after a resume is counted once: a resumed run continues from its checkpoint's count.
        """
        running = 0.0 if self._clock_since is None else time.monotonic() - self._clock_since
        return self._seconds_done + running

    @property
    def learn_seconds(self) -> float | None:
        """Seconds the current ``learn()`` has run (what ``schedule.max_minutes`` bounds); None outside it."""
        return None if self._learn_began is None else time.monotonic() - self._learn_began

    @property
    def wall_seconds(self) -> float | None:
        """Seconds the last ``learn()`` took (None before one ran): the final summary's wall time."""
        return self._learn_seconds

    @property
    def learn_start_counts(self) -> tuple[int, int]:
        """``(total_frames, grad_update_counter)`` when the last ``learn()`` began (a resumed run starts above
        zero): the final summary's rates count only what this session did."""
        return self._learn_start_counts

    def x_axes(self, *, evaluation_only: bool = False) -> dict[str, Any]:
        """The x-axes attached to every record: frames (total and per env name), epoch, gradient steps, and
        training wall time (:data:`~amago_core.experiment.metrics.WALL_TIME_KEY`; an evaluation has no training
        clock, so its records carry one only when a restored progress gave it)."""
        axes: dict[str, Any] = {
            "total_frames": self._frames,
            "Epoch": self._epoch,
            "gradient_steps": self._updates,
        }
        if not evaluation_only or self._seconds_done:
            axes[WALL_TIME_KEY] = round(self.training_wall_seconds, 3)
        for name, frames in sorted(self._frames_by_env_name.items()):
            axes[f"total_frames-{name}"] = frames
        return axes

    def record(self, *, num_processes: int, logger_step: int) -> Progress:
        """The counters as a training state records them."""
        return Progress(
            epoch=self._epoch,
            grad_update_counter=self._updates,
            total_frames=self._frames,
            frames_by_env_name=dict(self._frames_by_env_name),
            num_processes=num_processes,
            logger_step=logger_step,
            wall_seconds=self.training_wall_seconds,
        )

    def at_epoch(self, epoch: int) -> None:
        """The loop moved to ``epoch``."""
        self._epoch = epoch

    def count_update(self) -> None:
        """One optimiser update happened."""
        self._updates += 1

    def reset_updates(self) -> None:
        """A new optimiser was built: no update yet (a resumed state restores its count afterwards)."""
        self._updates = 0

    def count_frames(self, parts: list[dict[str, int]]) -> None:
        """Adds env steps by env name (one dict per process)."""
        for by_name in parts:
            self._frames += sum(by_name.values())
            for name, count in by_name.items():
                self._frames_by_env_name[name] = self._frames_by_env_name.get(name, 0) + count

    def start_learning(self) -> None:
        """``learn()`` begins: the training clock and this session's time run from now."""
        self._learn_began = self._clock_since = time.monotonic()
        self._learn_start_counts = (self._frames, self._updates)

    def stop_learning(self) -> None:
        """``learn()`` ended: the clock stops, the session's seconds are kept."""
        if self._learn_began is not None:
            self._learn_seconds = time.monotonic() - self._learn_began
        self._seconds_done = self.training_wall_seconds
        self._clock_since = self._learn_began = None

    def restore(self, progress: Progress, *, next_epoch: bool = False) -> None:
        """Sets every counter and the clock from a recorded ``progress``, the one way they are restored (a loaded
        or resumed state, an evaluation at its weights' x-axes); ``next_epoch``: continue after its epoch."""
        self._epoch = progress.epoch + int(next_epoch)
        self._updates, self._frames = progress.grad_update_counter, progress.total_frames
        self._frames_by_env_name = dict(progress.frames_by_env_name)
        self._seconds_done = float(progress.wall_seconds)
        if self._clock_since is not None:  # inside learn(): count this session's time from here
            self._clock_since = time.monotonic()
