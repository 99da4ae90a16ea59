"""Whole-run progress on stderr: where the run is (epoch, env steps, updates, ETA) and a compact table of numbers.

Everything here runs once per epoch, never per step. On a terminal the run has one whole-run tqdm bar (the
per-phase bars nest under it); when stderr is a file or a CI log, each epoch writes one plain line instead, so a
redirected log holds readable lines rather than carriage-return frames. The table is SB3's logger's kind.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from amago_core.experiment.metrics import AVERAGE_RETURN_KEY, EPISODES_KEY, EPISODIC_RETURN_KEY

if TYPE_CHECKING:
    from amago_core.config.experiment import ExperimentConfig

TABLE_EVERY_S = 60.0
"""Between validation epochs, a table at least this often (seconds)."""
TABLE_LOSSES = ("Loss", "Critic Loss", "Actor Loss")
"""The ``train/`` losses the table shows, when the agent reports them."""


def stderr_is_tty(stream: TextIO | None = None) -> bool:
    """Whether progress goes to a terminal (bars) rather than a file or a pipe (plain lines)."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):  # a closed or detached stream
        return False


def duration(seconds: float) -> str:
    """``h:mm:ss`` (``12:05`` under an hour), the format tqdm and most trainers print."""
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def count(value: float) -> str:
    """``950``, ``12.3k``, ``4.5M``: counts short enough for one line."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.0f}"


def number(value: Any) -> str:
    """A metric's value in at most 4 significant digits."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.4g}"
    return str(value)


@dataclass
class EpochReport:
    """What one finished epoch reports to :class:`RunProgress`.

    Attributes:
        epoch: the epoch just finished (0-based).
        total_frames: env steps collected so far (all processes).
        updates: gradient steps so far.
        metrics: the epoch's metrics, ``{section}/{key}`` (``val/...``, ``train/...``).
    """

    epoch: int
    total_frames: int
    updates: int
    metrics: Mapping[str, Any]


class RunProgress:
    """The whole run's progress line and periodic table (main process, ``logging.verbose``).

    Args:
        epochs: the schedule's number of epochs.
        first_epoch: the epoch this session starts at (after a resume, the epochs before it are done).
        frames_target: env steps the whole schedule collects (0: unknown, e.g. a learn-only process).
        frames_at_start: env steps already collected when this session started (a resumed run).
        updates_at_start: gradient steps already done when this session started.
        stream: where to write (stderr).
        bars: draw a tqdm bar (a terminal) rather than plain lines; None: when ``stream`` is a terminal.
        clock: seconds, monotonic (tests pass a fake one).
    """

    def __init__(
        self,
        *,
        epochs: int,
        first_epoch: int = 0,
        frames_target: int = 0,
        frames_at_start: int = 0,
        updates_at_start: int = 0,
        stream: TextIO | None = None,
        bars: bool | None = None,
        clock: Any = time.monotonic,
    ) -> None:
        self.epochs = epochs
        self.first_epoch = first_epoch
        self.frames_target = frames_target
        self.stream = sys.stderr if stream is None else stream
        self.bars = stderr_is_tty(self.stream) if bars is None else bars
        self.clock = clock
        self.started = clock()
        self._frames_at_start = frames_at_start
        self._updates_at_start = updates_at_start
        self._last_table = self.started
        self._losses: dict[str, Any] = {}
        """The newest value of each of :data:`TABLE_LOSSES`: losses are logged every ``log_interval`` updates,
        not every epoch, so an epoch's table shows the last ones logged."""
        self._bar: Any = None
        if self.bars:
            from tqdm.auto import tqdm

            self._bar = tqdm(
                total=epochs,
                initial=first_epoch,
                desc="run",
                unit="epoch",
                file=self.stream,
                dynamic_ncols=True,
                smoothing=0,  # the ETA from the mean epoch time, not the last few epochs
            )

    @property
    def elapsed(self) -> float:
        """Seconds since this session's first epoch began."""
        return self.clock() - self.started

    def eta(self, epochs_done: int) -> float:
        """Seconds left: the mean epoch time of this session times the epochs still to run."""
        done_here = epochs_done - self.first_epoch
        if done_here <= 0:
            return math.nan
        return self.elapsed / done_here * max(self.epochs - epochs_done, 0)

    def fps(self, total_frames: int) -> float:
        """Env steps per second over this session (SB3's ``fps``)."""
        return (total_frames - self._frames_at_start) / max(self.elapsed, 1e-9)

    def _steps(self, total_frames: int) -> str:
        return count(total_frames) + (f"/{count(self.frames_target)}" if self.frames_target > 0 else "")

    def line(self, report: EpochReport) -> str:
        """``epoch 12/100 | env steps 1.6k/13.2k | updates 132 | elapsed 00:25 | ETA 03:05``."""
        done = report.epoch + 1
        return (
            f"epoch {done}/{self.epochs} | env steps {self._steps(report.total_frames)} | updates "
            f"{count(report.updates)} | elapsed {duration(self.elapsed)} | ETA {duration(self.eta(done))}"
        )

    def table(self, report: EpochReport) -> list[str]:
        """A few ``name | value`` lines (SB3's logger table): throughput, returns, losses, time."""
        metrics = report.metrics
        rows: list[tuple[str, str]] = [
            ("epoch", f"{report.epoch + 1}/{self.epochs}"),
            ("env steps", count(report.total_frames)),
            ("fps (env steps/s)", f"{self.fps(report.total_frames):.0f}"),
            ("updates", count(report.updates)),
        ]
        elapsed = self.elapsed
        if elapsed > 0 and report.updates > self._updates_at_start:
            rows.append(("updates/s", f"{(report.updates - self._updates_at_start) / elapsed:.3g}"))
        train_return = metrics.get(f"train/{EPISODIC_RETURN_KEY}")
        if train_return is not None:
            episodes = metrics.get(f"train/{EPISODES_KEY}")
            suffix = f" ({episodes:.0f} episodes)" if isinstance(episodes, int | float) else ""
            rows.append(("train return", f"{number(train_return)}{suffix}"))
        val_return = metrics.get(f"val/{AVERAGE_RETURN_KEY}")
        if val_return is not None:
            rows.append(("val return", number(val_return)))
        self._note_losses(metrics)
        rows.extend((loss, number(value)) for loss, value in self._losses.items())
        rows.append(("elapsed", duration(elapsed)))
        width = max(len(name) for name, _ in rows)
        value_width = max(len(value) for _, value in rows)
        rule = "-" * (width + value_width + 7)
        return [rule, *(f"| {name:<{width}} | {value:>{value_width}} |" for name, value in rows), rule]

    def _note_losses(self, metrics: Mapping[str, Any]) -> None:
        for loss in TABLE_LOSSES:
            if f"train/{loss}" in metrics:
                self._losses[loss] = metrics[f"train/{loss}"]

    def _write(self, lines: list[str]) -> None:
        if self._bar is not None:
            from tqdm.auto import tqdm

            tqdm.write("\n".join(lines), file=self.stream)  # above the bars, which redraw below it
        else:
            self.stream.write("".join(f"{line}\n" for line in lines))
            self.stream.flush()

    def wants_table(self, report: EpochReport) -> bool:
        """On validation epochs, the last epoch, and once :data:`TABLE_EVERY_S` passed since the last table."""
        return (
            f"val/{AVERAGE_RETURN_KEY}" in report.metrics
            or report.epoch + 1 >= self.epochs
            or self.clock() - self._last_table >= TABLE_EVERY_S
        )

    def epoch_done(self, report: EpochReport) -> None:
        """Reports a finished epoch: the bar moves (a terminal) or one plain line (a file); a table when due."""
        if self._bar is not None:
            steps, updates = self._steps(report.total_frames), count(report.updates)
            self._bar.set_postfix_str(f"env steps {steps}, updates {updates}", refresh=False)
            self._bar.update(report.epoch + 1 - self._bar.n)
        else:
            self._write([f"amago: {self.line(report)}"])
        self._note_losses(report.metrics)
        if self.wants_table(report):
            self._last_table = self.clock()
            self._write(self.table(report))

    def close(self) -> None:
        """Closes the bar (the last state stays on screen)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def frames_target(config: ExperimentConfig, *, processes: int, collects: bool) -> int:
    """Train env steps the whole schedule collects over every process (0 when this process never counts them):
    the progress line's target."""
    sched, rollout, ray = config.schedule, config.rollout, config.ray
    if not collects:
        return 0
    actors = ray.actors * config.envs_per_ray_actor if ray.actors else rollout.parallel_actors * processes
    return max(sched.epochs - sched.start_collecting_at_epoch, 0) * sched.train_timesteps_per_epoch * actors


def final_numbers(experiment: Any) -> dict[str, Any]:
    """What ``amago run``'s final summary adds about the training session: wall time, overall rates, the best
    val return and its epoch, and the policy weights to load (``latest``, else the newest kept epoch).

    Args:
        experiment: an :class:`~amago_core.experiment.Experiment` after :meth:`learn`.
    """
    wall = experiment.counters.wall_seconds
    frames_at_start, updates_at_start = experiment.counters.learn_start_counts
    numbers: dict[str, Any] = {"wall_seconds": None if wall is None else round(wall, 1)}
    if wall:
        numbers["env_steps_per_second"] = (experiment.total_frames - frames_at_start) / wall
        numbers["updates_per_second"] = (experiment.grad_update_counter - updates_at_start) / wall
    best = experiment.reports.best_val
    numbers["best_val_return"] = None if best is None else best[0]
    numbers["best_val_epoch"] = None if best is None else best[1]
    paths = experiment.paths
    checkpoint = paths.latest_policy if paths.latest_policy.is_file() else None
    if checkpoint is None and (saved := paths.saved_policies()):
        checkpoint = saved[-1][1]
    numbers["checkpoint"] = None if checkpoint is None else str(checkpoint)
    return numbers
