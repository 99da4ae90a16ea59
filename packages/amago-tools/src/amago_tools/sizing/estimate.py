"""The wall-time estimate ``amago run`` prints before a long run starts (amago-tools' half of the pre-flight checks).

A preset written for a GPU node runs for days on a laptop with only a per-epoch ETA to say so. A run whose
schedule could plausibly take long (:func:`floor_seconds` above :data:`ESTIMATE_ABOVE_SECONDS`) is measured with
``--budget``'s throw-away copy (:mod:`amago_tools.sizing.calibrate`, seconds) and its estimate printed in one line
on stderr; on a machine without CUDA, a run estimated beyond :data:`LONG_ON_CPU_SECONDS` also gets the
``--budget`` / ``--steps`` line that fits an hour. The main job, ``--smoke`` and tiny test configs are far below
the floor and never pay for the measurement. ``--no-preflight`` or ``AMAGO_NO_PREFLIGHT=1`` turns it off, with
the env-process check (:mod:`amago_tools.preflight`).

Torch-free at import; torch is imported only when a run is measured.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

FLOOR_SECONDS_PER_UPDATE = 0.02
"""Fewest seconds one gradient update takes, for the pre-estimate: a small model's update on a fast CPU core
(the main job's 1,100 updates of 12-step windows take ~0.1 s each on a 2-core CPU)."""
FLOOR_SECONDS_PER_POOL_STEP = 0.001
"""Fewest seconds one step of the env pool takes, policy included, for the pre-estimate."""
ESTIMATE_ABOVE_SECONDS = 300.0
"""A run whose :func:`floor_seconds` is above this is measured before it starts. The main job's floor is
~25 s (it runs ~3 min on a 2-core CPU), so it, ``--smoke`` and test configs are never measured; a floor of 5 min
is an hour or more on a CPU, where seconds of measuring are worth their answer."""
LONG_ON_CPU_SECONDS = 2 * 3600.0
"""An estimate above this on a machine without CUDA gets the line that says how to fit an hour."""

_cli_estimated = False
"""Whether ``amago run`` decided on its estimate in this process (printed or not): ``start()`` then adds none."""


def floor_seconds(config: Any) -> float:
    """An optimistic wall time of ``config``'s run from its schedule alone: every update and every env step of
    training and validation at the fastest plausible speed (:data:`FLOOR_SECONDS_PER_UPDATE`,
    :data:`FLOOR_SECONDS_PER_POOL_STEP`). Cheap (no measuring); the real run takes this long or longer.

    The same count of updates, steps and validation passes as ``--budget``'s estimate, at the floor's costs.
    """
    from amago_core.config.lengths import longest_sample
    from amago_tools.sizing.budget import Costs, estimated_seconds

    floor = Costs(
        seconds_per_pool_step=FLOOR_SECONDS_PER_POOL_STEP,
        seconds_per_update=FLOOR_SECONDS_PER_UPDATE,
        startup_seconds=0.0,
        sequence_length=longest_sample(config),  # every update costs the floor, whatever its length
    )
    return estimated_seconds(config, floor)


def format_hours(seconds: float) -> str:
    """``~40 s``, ``~25 min``, ``~45 h``: a wall-time estimate as a person reads it."""
    if seconds < 90:
        return f"~{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"~{seconds / 60:.0f} min"
    if seconds < 100 * 3600:
        return f"~{seconds / 3600:.1f} h".replace(".0 h", " h")
    return f"~{seconds / 86400:.0f} days"


def _cuda_available() -> bool:
    import torch  # only here: measuring a run has imported it already

    return bool(torch.cuda.is_available())


def estimate_line(config: Any, original: Any, user: Mapping[str, Any], costs: Any, *, cuda: bool) -> str:
    """The one line that says how long ``config``'s run takes at ``costs``, and how to fit an hour when that is
    far too long for a machine without CUDA.

    Args:
        config: what will run (sized by ``--steps`` when given).
        original: the config before any sizing (what ``--budget 1h`` / ``--steps`` would size).
        user: the user's own sources merged.
        costs: this machine's :class:`~amago_tools.sizing.budget.Costs` for the run.
        cuda: whether a CUDA device is available.
    """
    from amago_core.config.sizing import BudgetError, apply_sizing
    from amago_tools.sizing.budget import estimated_seconds, format_steps, size_for_seconds

    sched = config.schedule
    seconds = estimated_seconds(config, costs)
    what = _schedule_words(config)
    if sched.max_minutes is not None and seconds > sched.max_minutes * 60 + costs.startup_seconds:
        return (
            f"amago: this run needs {format_hours(seconds)} here ({what}); schedule.max_minutes="
            f"{sched.max_minutes:g} stops it after {format_hours(sched.max_minutes * 60)}."
        )
    if cuda or seconds <= LONG_ON_CPU_SECONDS:
        return f"amago: this run needs {format_hours(seconds)} here ({what})."
    try:
        hour = apply_sizing(original, size_for_seconds(original, user, costs, 3600.0))
    except BudgetError:
        return (
            f"amago: this run needs {format_hours(seconds)} on this CPU ({what}); even its smallest sized run "
            "does not fit an hour here: try --smoke, a smaller model, or a GPU."
        )
    env_steps = hour.schedule.epochs * hour.schedule.train_timesteps_per_epoch * hour.rollout.parallel_actors
    return (
        f"amago: this run needs {format_hours(seconds)} on this CPU ({what}); --budget 1h or --steps "
        f"{format_steps(env_steps)} fits an hour."
    )


def _schedule_words(config: Any) -> str:
    sched, actors = config.schedule, config.rollout.parallel_actors
    return (
        f"{sched.epochs:,} epochs x {sched.train_timesteps_per_epoch:,} steps x {actors} actors, "
        f"{sched.epochs * sched.train_batches_per_epoch:,} updates"
    )


def floor_line(config: Any) -> str | None:
    """The line for a plausibly long run that is not measured (``--dry-run``, ``Experiment.start()`` in Python):
    its :func:`floor_seconds`, a lower bound, with how to get the measured figure; None for a short run."""
    seconds = floor_seconds(config)
    if seconds <= ESTIMATE_ABOVE_SECONDS:
        return None
    return (
        f"amago: this run needs at least {format_hours(seconds)} even on a fast CPU ({_schedule_words(config)}; "
        "a 2-core laptop takes several times that); `amago run` measures it here before it starts, and --budget "
        "or --steps size it."
    )


def estimate_wall_time(config: Any, original: Any, user: Mapping[str, Any], *, debug: bool) -> str | None:
    """Measures ``config``'s run with ``--budget``'s throw-away copy when its schedule is plausibly long
    (:func:`floor_seconds` above :data:`ESTIMATE_ABOVE_SECONDS`) and writes :func:`estimate_line` to stderr.

    A run that is not plausibly long is not measured (None). The estimate is advice: when the measurement
    fails, one note says so and the run starts anyway (the run itself reports what is wrong).

    Returns:
        The line written, or None when nothing was.
    """
    if floor_seconds(config) <= ESTIMATE_ABOVE_SECONDS:
        return None
    from amago_tools.sizing.calibrate import measure_costs

    sys.stderr.write(
        "amago: estimating this run's wall time (a throw-away copy of the run, seconds; --no-preflight skips it)...\n"
    )
    try:
        costs = measure_costs(config)
    except Exception as exc:  # advice only: the run reports its own failure
        if debug:
            raise
        sys.stderr.write(f"amago: note: could not estimate this run's wall time ({exc}); starting anyway.\n")
        return None
    line = estimate_line(config, original, user, costs, cuda=_cuda_available())
    sys.stderr.write(line + "\n")
    return line


def estimated_by_the_cli() -> None:
    """``amago run`` decides on its own estimate (printed or not): ``start()`` in this process adds none."""
    global _cli_estimated
    _cli_estimated = True


def say_at_start(experiment: Any) -> None:
    """``Experiment.start()`` from Python (the ``amago_on_start`` hook): a long run's :func:`floor_line`, unless
    ``amago run`` estimated it already in this process or the run is quiet (``logging.verbose`` off)."""
    if _cli_estimated or not experiment.config.logging.verbose:
        return
    if (line := floor_line(experiment.config)) is not None:
        sys.stderr.write(line + "\n")
