"""`amago run --budget 10m | --steps N | --smoke`: the resolved config sized to the machine (see ``config.sizing``).

torch is imported only when ``--budget`` measures this machine.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from amago_core.cli.output import fail

if TYPE_CHECKING:
    from amago_core.config.resolve import RunPlan

STEPS_PATTERN = re.compile(r"\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([km]?)\s*", re.IGNORECASE)


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
    smoke: bool,
    announce: bool,
    debug: bool,
) -> RunPlan:
    """``plan`` sized by the one budget flag given (``plan`` itself when none is); exits 2 on a bad one.

    Args:
        plan: the run's plan: its config, and the user's own sources (kept as set; they constrain the sizing).
        budget: ``--budget`` (wall time, e.g. ``10m``): measured on this machine, then sized; the run also
            stops at that time (``schedule.max_minutes``).
        steps: ``--steps`` (train env steps, all actors).
        smoke: ``--smoke``: a tiny end-to-end run of the same components (seconds).
        announce: write one line to stderr saying what the sized run will do.
        debug: tracebacks instead of one-line errors.
    """
    from pydantic import ValidationError

    from amago_core.cli.errors import fail_on_config_error, one_line_errors
    from amago_core.config.sizing import (
        SAFETY,
        BudgetError,
        apply_sizing,
        describe_schedule,
        estimated_seconds,
        format_duration,
        format_steps,
        memory_cut,
        parse_duration,
        size_for_seconds,
        size_schedule,
        smoke_env_steps,
        whole_episode_steps,
    )

    config, user = plan.config, plan.user
    given = [flag for flag, value in (("--budget", budget), ("--steps", steps), ("--smoke", smoke)) if value]
    if not given:
        return plan
    if len(given) > 1:
        fail(f"{' and '.join(given)} both size the run; pass one of them.")
    cut: str | None = None
    fix = ""
    try:
        if smoke:
            sized = plan.sized(size_schedule(config, user, smoke_env_steps(config, user), smoke=True)).config
            how = "--smoke"
        elif steps is not None:
            sized = plan.sized(size_schedule(config, user, parse_steps(steps))).config
            how = f"--steps {steps}"
            cut = memory_cut(config, sized)
            fix = f"--steps {format_steps(whole_episode_steps(config) or 1, up=True)}"
        else:
            seconds = parse_duration(str(budget))
            started = time.monotonic()
            if announce:
                sys.stderr.write(
                    "amago: measuring this machine for --budget (a throw-away copy of the run)...\n"
                )
            from amago_core.experiment.calibrate import measure_costs

            with one_line_errors(debug):
                costs = measure_costs(config)
            spent = time.monotonic() - started  # the measurement is part of the budget
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
    except BudgetError as exc:
        fail(str(exc))
    except ValidationError as exc:  # a user setting the sizing must keep (say, a fixed epoch count) conflicts
        fail_on_config_error(exc)
    if announce:
        sys.stderr.write(f"amago: sized by {how}: {describe_schedule(sized)}\n")
    if cut is not None:  # a warning, not a note: printed under --quiet too
        sys.stderr.write(
            f"amago: warning: {given[0]} {steps or budget} leaves too few steps for whole episodes: {cut}; {fix} keeps "
            "whole episodes (or set -o run.max_seq_len and -o replay.traj_save_len yourself).\n"
        )
    return replace(plan, config=sized)
