"""`amago run --budget 10m | --steps N`: the resolved plan sized to this machine, through amago-core's run hooks.

- ``amago_run_options``: the two options (:func:`run_options`);
- ``amago_plan_run``: the plan sized by the one given (:func:`plan_sized`, :func:`size_run`);
- ``amago_run_planned``, last: the wall-time estimate of a long run before it starts (:func:`estimate_before_run`).

The schedule arithmetic is amago-core's (``amago_core.config.sizing``, which its own ``--smoke`` uses); torch is
imported only when ``--budget`` or the estimate measures this machine.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from amago_core.cli.output import fail
from amago_core.hooks.specs import RunOption, RunRequest

if TYPE_CHECKING:
    from amago_core.config.experiment import ExperimentConfig
    from amago_core.config.resolve import RunPlan
    from amago_tools.sizing.budget import Costs

STEPS_PATTERN = re.compile(r"\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([km]?)\s*", re.IGNORECASE)


def run_options() -> list[RunOption]:
    """``--budget`` and ``--steps`` on ``amago run`` (and ``amago config show``)."""
    return [
        RunOption(
            "budget",
            Annotated[
                str | None,
                typer.Option(
                    "--budget",
                    help="Wall time, e.g. 10m or 1.5h: measure this machine, size the run to fit, stop at the limit.",
                ),
            ],
        ),
        RunOption(
            "steps",
            Annotated[
                str | None,
                typer.Option(
                    "--steps", help="Train env steps (all actors), e.g. 200k: size the run to them."
                ),
            ],
        ),
    ]


def plan_sized(request: RunRequest) -> RunPlan | None:
    """``request.plan`` sized by ``--budget`` or ``--steps`` (None when neither is given); exits 2 on a bad one.

    A resumed run keeps its schedule. ``--budget`` measures a throw-away copy of the run, which starts its env
    processes: on a dry run (which :func:`amago_tools.preflight.check_run` leaves unchecked) they
    are checked against this machine first.
    """
    from amago_core.cli.errors import debugging
    from amago_core.cli.run_cmd import RESUME_KEEPS_SCHEDULE
    from amago_tools.preflight import check_env_processes, preflight_enabled

    options = request.options
    budget, steps, smoke = options.get("budget"), options.get("steps"), bool(options.get("smoke"))
    if not (budget or steps):
        return None
    if options.get("resume") is not None:
        fail(RESUME_KEEPS_SCHEDULE)
    # Without --dry-run they were checked before any sizing (preflight.check_run, around this hook;
    # --smoke with --budget is refused below).
    checks = preflight_enabled(bool(options.get("no_preflight")))
    if checks and budget and options.get("dry_run") and not smoke:
        check_env_processes(request.plan.config)
    return size_run(
        request.plan,
        budget=budget,
        steps=steps,
        smoke=smoke,
        announce=not options.get("quiet"),
        debug=debugging(bool(options.get("debug"))),
    )


def parse_steps(text: str) -> int:
    """Env steps written ``200000``, ``200k``, ``1.5M`` or ``2e5``; exits 2 with one line otherwise."""
    match = STEPS_PATTERN.fullmatch(text)
    value = float(match.group(1)) * {"": 1, "k": 1e3, "m": 1e6}[match.group(2).lower()] if match else 0
    if value < 1:
        fail(f"--steps {text!r} is not a number of env steps; write it like 200000, 200k or 1.5M.")
    return int(value)


def size_run(
    plan: RunPlan,
    *,
    budget: str | None,
    steps: str | None,
    smoke: bool = False,
    announce: bool,
    debug: bool,
) -> RunPlan:
    """``plan`` sized by the one budget flag given (``plan`` itself when none is); exits 2 on a bad one.

    Args:
        plan: the run's plan: its config, and the user's own sources (kept as set; they constrain the sizing).
        budget: ``--budget`` (wall time, e.g. ``10m``): measured on this machine, then sized; the run also
            stops at that time (``schedule.max_minutes``).
        steps: ``--steps`` (train env steps, all actors).
        smoke: whether ``--smoke`` was given too (amago-core sizes that one; with another it is refused).
        announce: write one line to stderr saying what the sized run will do.
        debug: tracebacks instead of one-line errors.
    """
    from amago_core.cli.errors import fail_on_config_error
    from amago_core.config.sizing import apply_sizing, describe_schedule, size_schedule
    from amago_tools.sizing.budget import (
        SAFETY,
        context_cut,
        estimated_seconds,
        format_duration,
        format_steps,
        memory_cut,
        size_for_seconds,
        whole_episode_steps,
    )

    config, user = plan.config, plan.user
    given = [flag for flag, value in (("--budget", budget), ("--steps", steps), ("--smoke", smoke)) if value]
    if not (budget or steps):
        return plan
    if len(given) > 1:
        fail(f"{' and '.join(given)} both size the run; pass one of them.")
    cut: str | None = None
    fix = ""
    # BudgetError and the config's own validation error (pydantic's) are both ValueErrors: the first says what to
    # pass instead, the second that a user setting the sizing must keep (say, a fixed epoch count) conflicts.
    try:
        if steps is not None:
            sized = plan.sized(size_schedule(config, user, parse_steps(steps))).config
            how = f"--steps {steps}"
            cut = memory_cut(config, sized)
            fix = f"--steps {format_steps(whole_episode_steps(config) or 1, up=True)}"
        else:
            seconds, costs, spent = _measured(config, str(budget), announce=announce, debug=debug)
            sized = plan.sized(size_for_seconds(config, user, costs, seconds, spent=spent)).config
            seconds -= spent
            user_schedule = user.get("schedule")
            if not (isinstance(user_schedule, Mapping) and "max_minutes" in user_schedule):
                # The loop's own limit leaves room for the final test pass and the summary.
                loop_seconds = (
                    seconds
                    - costs.startup_seconds
                    - sized.schedule.val_timesteps_per_epoch * costs.seconds_per_pool_step
                )
                sized = apply_sizing(
                    sized, {"schedule": {"max_minutes": round(max(loop_seconds, 1.0) / 60, 2)}}
                )
            how = (
                f"--budget {budget} (here: {costs.seconds_per_pool_step * 1e3:.1f} ms per step of "
                f"{config.rollout.parallel_actors} envs, {costs.seconds_per_update * 1e3:.0f} ms per update, "
                f"{costs.startup_seconds:.1f} s to start)"
            )
            cut = memory_cut(config, sized)
            whole = whole_episode_steps(config)
            if cut is not None and whole is not None:
                whole_run = plan.sized(size_schedule(config, user, whole)).config
                fix = f"--budget {format_duration(estimated_seconds(whole_run, costs) / SAFETY + spent)}"
    except ValueError as exc:
        fail_on_config_error(exc)
    if announce:
        sys.stderr.write(f"amago: sized by {how}: {describe_schedule(sized)}\n")
    if cut is not None:  # a warning, not a note: printed under --quiet too
        sys.stderr.write(
            f"amago: warning: {given[0]} {steps or budget} leaves too few steps for whole episodes: {cut}; {fix} keeps "
            "whole episodes (or set -o run.max_seq_len and -o replay.traj_save_len yourself).\n"
        )
    elif (shorter := context_cut(config, sized)) is not None:
        sys.stderr.write(
            f"amago: warning: with {given[0]} {steps or budget} {shorter}; a larger {given[0]} keeps more (or set "
            "-o run.max_seq_len and -o replay.traj_save_len yourself).\n"
        )
    return replace(plan, config=sized)


def _measured(
    config: ExperimentConfig, budget: str, *, announce: bool, debug: bool
) -> tuple[float, Costs, float]:
    """``--budget``'s seconds, this machine's costs for ``config`` and the seconds measuring them took (part of
    the budget); exits 2 on a budget that is not a duration, and with one line when the measurement fails."""
    from amago_core.cli.errors import one_line_errors
    from amago_core.config.sizing import BudgetError
    from amago_tools.sizing.budget import parse_duration
    from amago_tools.sizing.calibrate import measure_costs

    try:
        seconds = parse_duration(budget)
    except BudgetError as exc:
        fail(str(exc))
    started = time.monotonic()
    if announce:
        sys.stderr.write("amago: measuring this machine for --budget (a throw-away copy of the run)...\n")
    # Outside size_run's ValueError handling: with --debug a failed measurement shows its own traceback.
    with one_line_errors(debug):
        costs = measure_costs(config)
    return seconds, costs, time.monotonic() - started


def estimate_before_run(request: RunRequest) -> None:
    """The wall-time estimate of a long run, before it trains (see :mod:`amago_tools.sizing.estimate`).

    Not for ``--quiet``, ``--smoke`` (tiny), ``--budget`` (measured and sized already), a resumed run or
    ``--no-preflight`` / ``AMAGO_NO_PREFLIGHT=1``; a dry run says the floor (a lower bound, not measured).
    """
    from amago_core.cli.errors import debugging
    from amago_tools.preflight import preflight_enabled
    from amago_tools.sizing.estimate import estimate_wall_time, estimated_by_the_cli, floor_line

    estimated_by_the_cli()
    options = request.options
    skipped = ("quiet", "smoke", "budget")
    if any(options.get(name) for name in skipped) or options.get("resume") is not None:
        return
    if options.get("dry_run"):  # a dry run is not measured (it builds nothing): its floor, a lower bound
        if (line := floor_line(request.plan.config)) is not None:
            sys.stderr.write(line + "\n")
        return
    if not preflight_enabled(bool(options.get("no_preflight"))):
        return
    plan = request.plan
    estimate_wall_time(
        plan.config, request.resolved.config, plan.user, debug=debugging(bool(options.get("debug")))
    )
