"""What ``--budget`` and ``--steps`` add to amago-core's schedule sizing: a run's wall time at measured costs,
the most env steps that fit a wall-time budget, and what a short budget took from a memory task.

Sizing a schedule to a number of env steps is amago-core's (:func:`amago_core.config.sizing.size_schedule`,
which ``--smoke`` uses too); a wall-time budget is turned into env steps here, at the costs
:mod:`amago_tools.sizing.calibrate` measures on the machine. Arithmetic only (torch-free).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.lengths import longest_sample
from amago_core.config.sizing import (
    DATA_BY_MEMORY,
    MIN_EPOCHS,
    VAL_SHARE,
    BudgetError,
    apply_sizing,
    memory_episode_steps,
    size_schedule,
)
from amago_core.plugins.registry import Registries

SAFETY = 0.85
"""Share of a wall-time budget planned for; the rest absorbs per-epoch overheads and a noisy machine."""


@dataclass(frozen=True)
class Costs:
    """What one run of this config costs on this machine (``amago_tools.sizing.calibrate`` measures it).

    Attributes:
        seconds_per_pool_step: one step of every train env, policy included.
        seconds_per_update: one gradient update on windows of ``sequence_length`` steps.
        startup_seconds: building envs, model and buffer before the first step.
        sequence_length: the longest sequence the timed updates sampled (``lengths.longest_sample``).
    """

    seconds_per_pool_step: float
    seconds_per_update: float
    startup_seconds: float
    sequence_length: int

    def update_seconds(self, sequence_length: int) -> float:
        """One update on sequences of ``sequence_length`` steps (its cost grows about linearly with it).

        Windows longer than the measured ones cost more, not the same: the probe times long windows on shorter
        ones (``calibrate.PROBE_STEPS_CAP``).
        """
        return self.seconds_per_update * sequence_length / self.sequence_length


def parse_duration(text: str) -> float:
    """Seconds of a budget written ``90s``, ``10m``, ``1.5h`` or a bare number of seconds.

    Raises:
        BudgetError: not a positive duration.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text.lower())
    if match is None or float(match.group(1)) <= 0:
        msg = f"--budget {text!r} is not a duration; write it like 90s, 10m or 1.5h."
        raise BudgetError(msg)
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def _updates_per_pool_step(config: ExperimentConfig) -> float:
    sched = config.schedule
    return (
        sched.train_batches_per_epoch / sched.train_timesteps_per_epoch
        if sched.train_timesteps_per_epoch
        else 0.0
    )


def estimated_seconds(config: ExperimentConfig, costs: Costs) -> float:
    """Wall time of ``config``'s run at ``costs``: start, collection, updates, every val pass and the final test."""
    sched = config.schedule
    val_passes = math.ceil(sched.epochs / sched.val_interval) + 1 if sched.val_interval else 1
    pool_steps = sched.epochs * sched.train_timesteps_per_epoch + val_passes * sched.val_timesteps_per_epoch
    updates = sched.epochs * sched.train_batches_per_epoch
    return (
        costs.startup_seconds
        + pool_steps * costs.seconds_per_pool_step
        + updates * costs.update_seconds(longest_sample(config))
    )


def format_duration(seconds: float) -> str:
    """A ``--budget`` value of at least ``seconds``, rounded up to what a person would type (``90s``, ``8m``, ``2.5h``)."""
    if seconds <= 120:
        return f"{math.ceil(seconds)}s"
    if seconds <= 2 * 3600:
        return f"{math.ceil(seconds / 60)}m"
    return f"{math.ceil(seconds / 360) / 10:g}h"


def format_steps(steps: int, *, up: bool = False) -> str:
    """A ``--steps`` value close to ``steps`` with two significant digits (``30k``, ``1.2M``): never above it,
    or never below it with ``up`` (a value that must reach ``steps``)."""
    if steps < 1000:
        return str(max(1, steps))
    quantum = 10 ** (len(str(steps)) - 2)  # two significant digits
    value = (math.ceil if up else math.floor)(steps / quantum) * quantum
    unit, scale = ("M", 10**6) if value >= 10**6 else ("k", 10**3)
    return f"{value / scale:g}{unit}"


def smallest_run_seconds(
    config: ExperimentConfig,
    user: Mapping[str, Any],
    costs: Costs,
    *,
    registries: Registries | None = None,
) -> float:
    """Wall time of the smallest run a budget sizes ``config`` to (one step per actor in :data:`MIN_EPOCHS`
    epochs, at least one update each, validation floors of one whole episode), its safety margin included.
    ``registries`` validate the sized config (default: the process-wide registries)."""
    smallest = apply_sizing(
        config,
        size_schedule(config, user, config.rollout.parallel_actors * MIN_EPOCHS),
        registries=registries,
    )
    return estimated_seconds(smallest, costs) / SAFETY


def size_for_seconds(
    config: ExperimentConfig,
    user: Mapping[str, Any],
    costs: Costs,
    seconds: float,
    *,
    spent: float = 0.0,
    registries: Registries | None = None,
) -> dict[str, Any]:
    """The settings that make ``config`` fit ``seconds`` of wall time at the preset's update-to-data ratio.

    A suite that needs whole episodes in memory gets the most env steps that fit with whole episodes when any
    fit, before a longer run whose sequences are cut (a run that cannot remember does not learn the task).

    Args:
        config: the resolved config.
        user: the user's own sources merged (kept as set).
        costs: what this config costs here (``calibrate.measure_costs``).
        seconds: the whole budget.
        spent: the part of it already used (measuring the machine).
        registries: where the sized configs' components are looked up (default: the process-wide registries).

    Raises:
        BudgetError: the budget cannot fit the smallest run worth starting (one step per actor in each of
            :data:`MIN_EPOCHS` epochs, each with an update, its validation floor of one whole episode
            included); the message names the smallest ``--budget`` that would.
    """
    usable = (seconds - spent) * SAFETY
    actors = config.rollout.parallel_actors

    def fits(steps: int) -> bool:
        sized = apply_sizing(config, size_schedule(config, user, steps), registries=registries)
        return estimated_seconds(sized, costs) <= usable

    low = actors * MIN_EPOCHS
    if usable <= costs.startup_seconds:
        needed = smallest_run_seconds(config, user, costs, registries=registries) + spent
        msg = (
            f"a {format_duration(seconds)} budget leaves no time to train: starting this run takes "
            f"{costs.startup_seconds:.0f} s on this machine; give --budget {format_duration(needed)} or more."
        )
        raise BudgetError(msg)
    if not fits(low):
        # Else the run would be sized to a step or two: it finishes in time and learns nothing (validation
        # passes of whole episodes, the usual floor, can take the whole of a short budget on their own).
        smallest = apply_sizing(config, size_schedule(config, user, low), registries=registries)
        needed = smallest_run_seconds(config, user, costs, registries=registries) + spent
        msg = (
            f"--budget {format_duration(seconds)} cannot fit the smallest run worth starting here ({MIN_EPOCHS} "
            f"epochs of one step per actor with an update each, validation passes of "
            f"{smallest.schedule.val_timesteps_per_epoch:,} steps): give "
            f"--budget {format_duration(needed)} or more, or fewer validation steps with "
            "-o schedule.val_timesteps_per_epoch=N."
        )
        raise BudgetError(msg)
    per_pool_step = costs.seconds_per_pool_step * (1 + VAL_SHARE) + _updates_per_pool_step(
        config
    ) * costs.update_seconds(longest_sample(config))
    first_guess = max(1, int((usable - costs.startup_seconds) / per_pool_step)) * actors
    best = _most_steps_that_fit(fits, low, first_guess, actors)
    whole = whole_episode_steps(config)
    if whole is not None and best < whole and fits(whole):
        # Sizing steps past `whole` lengthens the files to whole episodes, whose updates cost more: the steps
        # that fit are not one interval, so search again from the first whole-episode size.
        best = _most_steps_that_fit(fits, whole, whole, actors)
    return size_schedule(config, user, best)


def _most_steps_that_fit(fits: Callable[[int], bool], low: int, guess: int, actors: int) -> int:
    """The most env steps at or above ``low`` (which fits) that ``fits``, by doubling from ``guess`` then bisecting.

    The first guess is off where sizing moves what a step costs: validation has a floor (one episode per
    pass), and a short run saves (and trains on) shorter sequences, whose updates are cheaper.
    """
    high = max(guess, 2 * low)
    while fits(high) and high < 2**40:
        low, high = high, 2 * high
    while high - low > max(actors, low // 100):
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def whole_episode_steps(config: ExperimentConfig) -> int | None:
    """Fewest train env steps (all actors) at which sizing keeps whole episodes of a memory suite (else None)."""
    whole = memory_episode_steps(config)
    if whole is None:
        return None
    return DATA_BY_MEMORY * min(whole, config.replay.traj_save_len) * config.rollout.parallel_actors


def memory_cut(config: ExperimentConfig, sized: ExperimentConfig) -> str | None:
    """What sizing ``config`` into ``sized`` took from a whole-episode memory task, in words (None: nothing).

    Sizing cuts ``run.max_seq_len`` below one episode only when the budget collects too little for whole
    episodes to be written in time (amago-core's sizing keeps them while one fits in 1/``DATA_BY_MEMORY`` of
    the run); the agent then cannot recall the start of its episode (earlier attempts of a meta-episode, the
    key of Key-Door), which is the point of these tasks.
    """
    episode = memory_episode_steps(config)
    if episode is None or sized.run.max_seq_len >= min(episode, config.run.max_seq_len):
        return None
    return (
        f"sequences cut to {sized.run.max_seq_len} steps, shorter than one {episode}-step episode, so the agent "
        "cannot remember the start of its episode (the memory this task tests)"
    )


def context_cut(config: ExperimentConfig, sized: ExperimentConfig) -> str | None:
    """Any shortening of the policy's context (``run.max_seq_len``) by sizing, in words (None: nothing); the
    whole-episode memory tasks' stronger reason (:func:`memory_cut`) is :func:`size_run`'s own warning.

    A short budget writes short trajectory files in time (``_data_in_time`` in amago-core's sizing), and the
    training window cannot exceed a file: Meta-World's 256-step context becomes a few dozen steps under a
    few-minute budget. Nothing about that is visible in the run, so it is said once, before it starts.
    """
    before, after = config.run.max_seq_len, sized.run.max_seq_len
    if after >= before:
        return None
    return (
        f"the policy's context is cut from {before} to {after} steps (the trajectory files this budget writes in "
        "time are that short)"
    )
