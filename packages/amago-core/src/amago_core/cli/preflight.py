"""Checks `amago run` makes before the first step: how long the run takes here, and whether its env processes fit.

Both answer in one line on stderr before anything starts, because the failures they prevent show up late: a
preset written for a GPU node runs for days on a laptop with only a per-epoch ETA to say so, and an ``async``
pool of 36 env workers on 2 cores can be OOM-killed minutes in, leaving its workers behind.

- **Wall time** (:func:`estimate_wall_time`): a run whose schedule could plausibly take long
  (:func:`floor_seconds` above :data:`ESTIMATE_ABOVE_SECONDS`) is measured with ``--budget``'s throw-away copy
  (``experiment.calibrate``, seconds) and its estimate printed; on a machine without CUDA, a run estimated
  beyond :data:`LONG_ON_CPU_SECONDS` also gets the ``--budget`` / ``--steps`` line that fits an hour. The main
  job, ``--smoke`` and tiny test configs are far below the floor and never pay for the measurement.
- **Env processes** (:func:`check_env_processes`): ``async`` pools and local Ray actors against the cores and
  the memory available (``/proc/meminfo``), with a suggested ``parallel_actors`` / ``env_mode``.

``--no-preflight`` or ``AMAGO_NO_PREFLIGHT=1`` turns both off. This module is torch-free at import; torch is
imported only when a run is measured.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amago_core.cli.output import fail

SKIP_VARIABLE = "AMAGO_NO_PREFLIGHT"
"""Environment variable that turns the pre-flight checks off (``1``), as ``--no-preflight`` does."""

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

WORKER_MB = 300
"""Memory of one ``async`` env worker, in MB: measured for Meta-World's forkserver workers on a 2-core CPU
(issue 26); lighter envs take less, so the memory check is a warning until the estimate is far beyond what is
free (:data:`REFUSE_MEMORY_SHARE`)."""
RAY_ACTOR_MB = 550
"""Memory of one Ray actor process, in MB: the resident size of a Python process with torch imported, measured
on Linux (the actor holds a copy of the policy on top)."""
PROCESSES_PER_CORE = 2
"""More concurrently stepping env processes per core than this is oversubscribed: each waits for a core."""
WARN_MEMORY_SHARE = 0.8
"""A process estimate above this share of the available memory gets a warning."""
REFUSE_MEMORY_SHARE = 2.0
"""A process estimate above this multiple of the available memory is refused: it cannot fit even if the
per-worker figure is twice too high."""


def preflight_enabled(flag_off: bool) -> bool:
    """Whether the pre-flight checks run: not ``--no-preflight`` and not ``AMAGO_NO_PREFLIGHT=1``."""
    return not flag_off and os.environ.get(SKIP_VARIABLE, "") not in ("1", "true", "yes")


def floor_seconds(config: Any) -> float:
    """An optimistic wall time of ``config``'s run from its schedule alone: every update and every env step of
    training and validation at the fastest plausible speed (:data:`FLOOR_SECONDS_PER_UPDATE`,
    :data:`FLOOR_SECONDS_PER_POOL_STEP`). Cheap (no measuring); the real run takes this long or longer.

    The same count of updates, steps and validation passes as ``--budget``'s estimate, at the floor's costs.
    """
    from amago_core.config.lengths import longest_sample
    from amago_core.config.sizing import Costs, estimated_seconds

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
        costs: this machine's :class:`~amago_core.config.sizing.Costs` for the run.
        cuda: whether a CUDA device is available.
    """
    from amago_core.config.sizing import (
        BudgetError,
        apply_sizing,
        estimated_seconds,
        format_steps,
        size_for_seconds,
    )

    sched, actors = config.schedule, config.rollout.parallel_actors
    seconds = estimated_seconds(config, costs)
    what = (
        f"{sched.epochs:,} epochs x {sched.train_timesteps_per_epoch:,} steps x {actors} actors, "
        f"{sched.epochs * sched.train_batches_per_epoch:,} updates"
    )
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
    from amago_core.experiment.calibrate import measure_costs

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


@dataclass(frozen=True)
class EnvProcesses:
    """The env processes a run starts on this machine.

    Attributes:
        stepping: processes that step envs at the same time (one pool steps while the other waits).
        workers: ``async`` env worker processes alive together (train and val pools, Ray actors' pools).
        ray_actors: Ray actor processes started on this machine (a local cluster).
    """

    stepping: int
    workers: int
    ray_actors: int

    @property
    def memory_mb(self) -> int:
        """Estimated memory of all of them (:data:`WORKER_MB`, :data:`RAY_ACTOR_MB`)."""
        return self.workers * WORKER_MB + self.ray_actors * RAY_ACTOR_MB


def env_processes(config: Any) -> EnvProcesses:
    """The processes ``config``'s env pools and Ray actors start on this machine (in-process pools: none)."""
    rollout, ray, sched = config.rollout, config.ray, config.schedule
    is_async = rollout.env_mode == "async"
    validates = bool(sched.val_interval) and sched.val_timesteps_per_epoch > 0
    if ray.actors:
        local = ray.address is None  # `auto` or host:port place actors on a cluster we cannot see from here
        actors = ray.actors if local else 0
        per_actor = config.envs_per_ray_actor if is_async else 0
        val_here = rollout.parallel_actors if is_async and validates and not ray.evaluate else 0
        val_there = per_actor if validates and ray.evaluate else 0
        workers = actors * (per_actor + val_there) + val_here
        stepping = actors * max(1, per_actor)
        return EnvProcesses(stepping=stepping, workers=workers, ray_actors=actors)
    if not is_async:
        return EnvProcesses(stepping=0, workers=0, ray_actors=0)
    pools = 2 if validates else 1
    return EnvProcesses(
        stepping=rollout.parallel_actors, workers=pools * rollout.parallel_actors, ray_actors=0
    )


def available_memory_mb(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in MB (None where the file or the field is missing: not Linux)."""
    try:
        text = meminfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return None


def usable_cores() -> int:
    """Cores this process may run on (its affinity where the platform says, else every core)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def env_process_problem(config: Any, *, cores: int, available_mb: int | None) -> tuple[str, bool] | None:
    """What is wrong with ``config``'s env processes on a machine of ``cores`` and ``available_mb``, as
    ``(message, refuse)``; None when they fit.

    Oversubscribed cores and an estimate above :data:`WARN_MEMORY_SHARE` of the free memory are warnings (the
    per-worker figure is an estimate, and the user may know their env); an estimate above
    :data:`REFUSE_MEMORY_SHARE` times the free memory is refused, since the run would be OOM-killed part-way
    and leave its workers behind.
    """
    processes = env_processes(config)
    if not processes.workers and not processes.ray_actors:
        return None
    too_busy = processes.stepping > PROCESSES_PER_CORE * cores
    memory = processes.memory_mb
    too_big = available_mb is not None and memory > WARN_MEMORY_SHARE * available_mb
    if not (too_busy or too_big):
        return None
    refuse = available_mb is not None and memory > REFUSE_MEMORY_SHARE * available_mb
    # What to turn down: Ray actors when they are here, else the actors of the local pools.
    setting, count = (
        ("ray.actors", processes.ray_actors)
        if processes.ray_actors
        else ("rollout.parallel_actors", config.rollout.parallel_actors)
    )
    fit_cores = max(1, PROCESSES_PER_CORE * cores * count // max(1, processes.stepping))
    fit_memory = int(WARN_MEMORY_SHARE * available_mb * count / memory) if available_mb is not None else count
    suggested = max(1, min(fit_cores, fit_memory, count - 1))
    kinds = []
    if processes.workers:
        kinds.append(f"{processes.workers} async env workers")
    if processes.ray_actors:
        kinds.append(f"{processes.ray_actors} Ray actors")
    free = f"{available_mb / 1024:.1f} GB available" if available_mb is not None else "unknown free memory"
    problems = []
    if too_busy:
        problems.append(f"{processes.stepping} stepping at once on {cores} cores")
    if too_big:
        problems.append(f"~{memory / 1024:.1f} GB of {free}")
    figures = [f"~{WORKER_MB} MB per env worker"] if processes.workers else []
    figures += [f"~{RAY_ACTOR_MB} MB per Ray actor"] if processes.ray_actors else []
    message = (
        f"{' and '.join(kinds)} oversubscribe this machine ({', '.join(problems)}; estimated at "
        f"{', '.join(figures)}): try -o {setting}={suggested}, or -o rollout.env_mode=sync for cheap envs (they "
        "step faster in-process on few cores)"
    )
    return message, refuse


def check_env_processes(config: Any) -> None:
    """One warning line on stderr when ``config``'s env processes oversubscribe this machine; exits 2 with one
    line when their memory estimate clearly cannot fit (see :func:`env_process_problem`)."""
    problem = env_process_problem(config, cores=usable_cores(), available_mb=available_memory_mb())
    if problem is None:
        return
    message, refuse = problem
    if refuse:
        fail(f"{message}; or pass --no-preflight (or {SKIP_VARIABLE}=1) if you know they fit.")
    sys.stderr.write(f"amago: warning: {message}.\n")
