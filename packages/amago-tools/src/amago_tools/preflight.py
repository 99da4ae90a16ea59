"""The check ``amago run`` makes before the first step: whether the run's env processes fit this machine.

It answers in one line on stderr before anything starts, because the failure it prevents shows up late: an
``async`` pool of 36 env workers on 2 cores can be OOM-killed minutes in, leaving its workers behind.
:func:`check_env_processes` weighs ``async`` pools and local Ray actors against the cores and the memory
available (``/proc/meminfo``), with a suggested ``parallel_actors`` / ``env_mode``. The other check before the
first step is the wall-time estimate of a long run (:mod:`amago_tools.sizing.estimate`).

amago-tools adds both to ``amago run`` through amago-core's run hooks (``amago_tools.cli_hooks``):

- ``amago_run_options``: ``--no-preflight`` (:func:`run_options`), which, or ``AMAGO_NO_PREFLIGHT=1``, turns the
  checks off (:func:`preflight_enabled`);
- ``amago_plan_run``, around every plugin's sizing: a run that is neither ``--dry-run`` nor ``--smoke`` is
  checked before it is sized, since ``--budget`` starts the run's env processes to measure them
  (:func:`check_run`; a dry run with ``--budget`` is checked by the sizing itself);
- ``amago_run_planned``, last: a ``--smoke`` run (not a dry run) is checked once it is sized, since the sizing
  chose its actors (:func:`check_run` with ``smoke=True``).

Torch-free.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from amago_core.cli.output import fail

if TYPE_CHECKING:
    from amago_core.hooks.specs import RunOption, RunRequest

SKIP_VARIABLE = "AMAGO_NO_PREFLIGHT"
"""Environment variable that turns the pre-flight checks off (``1``), as ``--no-preflight`` does."""

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


def run_options() -> list[RunOption]:
    """``--no-preflight`` on ``amago run`` (and ``amago config show``, which takes the same options)."""
    import typer

    from amago_core.hooks.specs import RunOption

    return [
        RunOption(
            "no_preflight",
            Annotated[
                bool,
                typer.Option(
                    "--no-preflight",
                    help="Skip the checks before the first step: the wall-time estimate of a long run and the env "
                    "processes against cores and memory (also AMAGO_NO_PREFLIGHT=1).",
                ),
            ],
            default=False,
        )
    ]


def preflight_enabled(flag_off: bool) -> bool:
    """Whether the pre-flight checks run: not ``--no-preflight`` and not ``AMAGO_NO_PREFLIGHT=1``."""
    return not flag_off and os.environ.get(SKIP_VARIABLE, "") not in ("1", "true", "yes")


def check_run(request: RunRequest, *, smoke: bool) -> None:
    """The env processes of the run ``request`` starts, checked against this machine, for the runs of one kind
    (``smoke``: ``--smoke`` runs, or the others) and never a dry run. The others are checked before any plugin
    sizes them (``amago_plan_run``: ``--budget``'s measurement starts them), ``--smoke`` runs once sized (the
    sizing chose their actors; ``amago_run_planned``, after any plugin that runs the plan its own way)."""
    options = request.options
    if bool(options.get("smoke")) != smoke or options.get("dry_run"):
        return
    if preflight_enabled(bool(options.get("no_preflight"))):
        check_env_processes(request.plan.config)


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
