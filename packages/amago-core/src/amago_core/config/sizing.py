"""Size any preset to the machine: an env-step budget (``--steps``), a wall-time budget (``--budget``), ``--smoke``.

AMAGO's presets are written for GPU nodes (Meta-World ML45: 1000 epochs of 1000 steps and 1000 updates, a val
pass of 22,501 steps). A budget keeps what makes the preset *that* preset and shrinks how long it runs:

- **update-to-data ratio**: updates per epoch scale with env steps per epoch;
- **epochs**: at least :data:`MIN_EPOCHS` (a learning curve, checkpoints, resumable state), steps per epoch
  shrink first;
- **validation** (the epoch-0 pass included): at most :data:`VAL_SHARE` of the train env steps, at least one
  whole episode per val env where the suite knows its episode length; fewer passes before shorter ones;
- **schedules counted in steps** (exploration annealing, lr warm-up, ``start_*_at_epoch``, checkpoints) keep
  their share of the run; each component says which of its own options are counted in env steps
  (:meth:`~amago_core.config.component.ComponentConfig.follow_step_budget`).

Settings the user set themselves are never changed; they constrain the rest (``-o schedule.epochs=50 --steps
1e5`` keeps 50 epochs and sizes the steps per epoch). This module is arithmetic only (torch-free); the
wall-time budget's costs are measured by ``amago_core.experiment.calibrate``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.experiment import SLOT_KEYS, ExperimentConfig
from amago_core.config.lengths import longest_sample, window_within_files
from amago_core.config.sources import deep_merge, is_set
from amago_core.plugins.registry import Registries

MIN_EPOCHS = 10
"""Fewest epochs a budget is split into (``--smoke``: 2)."""
MAX_VAL_PASSES = 10
"""Most validation passes a budget schedules (the epoch-0 pass included)."""
VAL_SHARE = 0.2
"""Most env steps validation may take, as a share of the train env steps."""
SAFETY = 0.85
"""Share of a wall-time budget planned for; the rest absorbs per-epoch overheads and a noisy machine."""
DATA_BY = 4
"""Training data must exist within the first 1/DATA_BY of a sized run's env steps (see ``_data_in_time``)."""
DATA_BY_MEMORY = 2
"""The same for a suite that needs whole episodes in memory: whole episodes are kept while one fits in the
first 1/DATA_BY_MEMORY of the run (see ``_data_in_time``)."""
SMOKE_STEPS_PER_ACTOR = 16
"""Fewest env steps per actor of ``--smoke`` (2 epochs of 8); more when one episode is longer (see
:func:`smoke_steps_per_actor`)."""
SMOKE_LONGEST_EPISODE = 1_000
"""Longest episode (steps) ``--smoke`` plays to its end; a longer one (Meta-World's 1,500-step meta-episodes,
XLand's 3,645) would turn seconds into minutes, so the smoke run stops short and says so."""
SMOKE_ACTORS = 2
"""Actors of ``--smoke`` unless the user sets ``rollout.parallel_actors``."""


class BudgetError(ValueError):
    """A budget cannot be read or cannot size this config; the message says what to pass instead."""


@dataclass(frozen=True)
class Costs:
    """What one run of this config costs on this machine (``amago_core.experiment.calibrate`` measures it).

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


def _user_options(user: Mapping[str, Any], slot: str) -> set[str]:
    table = user.get(slot)
    return set(table) if isinstance(table, Mapping) else set()


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


def smoke_steps_per_actor(config: ExperimentConfig) -> int:
    """Env steps per actor that ``--smoke`` collects (and validates): enough to finish one episode.

    One episode plus its reset when the suite knows its length and it is at most :data:`SMOKE_LONGEST_EPISODE`,
    else :data:`SMOKE_STEPS_PER_ACTOR` (the run then says whether any episode finished).
    """
    env = config.component("env")
    episode = env.episode_steps() if isinstance(env, EnvSuiteConfig) else None
    if episode is None or episode > SMOKE_LONGEST_EPISODE:
        return SMOKE_STEPS_PER_ACTOR
    # One step more than the episode (an env may count its reset step), rounded up to the 2 smoke epochs.
    return max(SMOKE_STEPS_PER_ACTOR, 2 * math.ceil((episode + 1) / 2))


def smoke_env_steps(config: ExperimentConfig, user: Mapping[str, Any]) -> int:
    """Train env steps (all actors) of ``--smoke``: :func:`smoke_steps_per_actor` for each of its actors."""
    actors = config.rollout.parallel_actors
    if not is_set(user, "rollout", "parallel_actors"):
        actors = min(actors, SMOKE_ACTORS)
    return actors * smoke_steps_per_actor(config)


def _validation(
    config: ExperimentConfig, user: Mapping[str, Any], epochs: int, pool_steps: int, smoke: bool
) -> dict[str, Any]:
    sched = config.schedule
    if sched.val_interval is None or sched.val_timesteps_per_epoch == 0:
        return {}
    env = config.component("env")
    episode = env.episode_steps() if isinstance(env, EnvSuiteConfig) else None
    wanted = sched.val_timesteps_per_epoch
    if is_set(user, "schedule", "val_timesteps_per_epoch"):
        steps = wanted
    elif smoke:
        steps = min(wanted, smoke_steps_per_actor(config))
    else:
        budget = max(1, int(VAL_SHARE * pool_steps))
        one_episode = min(wanted, episode + 1) if episode else wanted
        steps = wanted if budget >= 3 * wanted else max(one_episode, min(wanted, budget // 3))
    if is_set(user, "schedule", "val_interval"):
        return {"val_timesteps_per_epoch": steps}
    passes = epochs if smoke else max(1, min(MAX_VAL_PASSES, epochs, int(VAL_SHARE * pool_steps) // steps))
    return {"val_timesteps_per_epoch": steps, "val_interval": max(1, math.ceil(epochs / passes))}


def _whole_episodes(config: ExperimentConfig) -> int | None:
    """Steps of one episode when ``config``'s suite needs whole episodes in memory (``whole_episode_memory``)."""
    env = config.component("env")
    if not isinstance(env, EnvSuiteConfig) or not type(env).whole_episode_memory:
        return None
    return env.episode_steps()


def _data_in_time(
    config: ExperimentConfig, user: Mapping[str, Any], pool_steps: int, smoke: bool
) -> dict[str, Any]:
    """Save lengths short enough that trajectory files (what training samples) exist in time.

    An actor writes a file when its episode ends or after ``traj_save_len`` steps. Meta-World's 1,500-step
    meta-episodes with 1,024-step files write nothing in a 10-minute CPU budget, so nothing would train; the
    files (and the sequence length, which cannot exceed them) shrink to what the budget collects: the first
    file must exist within 1/:data:`DATA_BY` of the run's ``pool_steps`` (steps per actor). A suite that needs
    whole episodes in memory keeps them while one episode fits in 1/:data:`DATA_BY_MEMORY` of the run (half of
    it trains on sequences the agent can remember with), because a shorter window cannot hold what the task
    asks it to recall; below that the memory is cut and :func:`memory_cut` says so. ``--smoke`` (a few steps,
    an end-to-end check) always cuts.
    """
    env = config.component("env")
    episode = env.episode_steps() if isinstance(env, EnvSuiteConfig) else None
    first_file = min(config.replay.traj_save_len, episode or config.replay.traj_save_len)
    if smoke:
        within = pool_steps // 2
    else:
        whole = _whole_episodes(config)
        if whole is not None and first_file <= pool_steps // DATA_BY_MEMORY:
            return {}
        within = pool_steps // DATA_BY
    within = max(1, within)
    if first_file <= within or is_set(user, "replay", "traj_save_len"):
        return {}
    return {"replay": {"traj_save_len": within}}  # the window follows in window_within_files


def whole_episode_steps(config: ExperimentConfig) -> int | None:
    """Fewest train env steps (all actors) at which sizing keeps whole episodes of a memory suite (else None)."""
    whole = _whole_episodes(config)
    if whole is None:
        return None
    return DATA_BY_MEMORY * min(whole, config.replay.traj_save_len) * config.rollout.parallel_actors


def memory_cut(config: ExperimentConfig, sized: ExperimentConfig) -> str | None:
    """What sizing ``config`` into ``sized`` took from a whole-episode memory task, in words (None: nothing).

    Sizing cuts ``run.max_seq_len`` below one episode only when the budget collects too little for whole
    episodes to be written in time (:func:`_data_in_time`); the agent then cannot recall the start of its
    episode (earlier attempts of a meta-episode, the key of Key-Door), which is the point of these tasks.
    """
    episode = _whole_episodes(config)
    if episode is None or sized.run.max_seq_len >= min(episode, config.run.max_seq_len):
        return None
    return (
        f"sequences cut to {sized.run.max_seq_len} steps, shorter than one {episode}-step episode, so the agent "
        "cannot remember the start of its episode (the memory this task tests)"
    )


def size_schedule(
    config: ExperimentConfig, user: Mapping[str, Any], env_steps: int, *, smoke: bool = False
) -> dict[str, Any]:
    """The settings that make ``config`` run about ``env_steps`` train env steps (all actors together).

    Args:
        config: the resolved config (preset, job and user sources).
        user: the user's own sources merged; what they set is kept and constrains the rest.
        env_steps: train env steps to plan for (``--steps``, or what a wall-time budget affords).
        smoke: ``--smoke``: 2 actors, 2 epochs of a few steps, tiny components (each one's ``smoke_options``).

    Returns:
        A config tree to merge over ``config`` (see :func:`apply_sizing`).

    Raises:
        BudgetError: the run collects nothing (``train_timesteps_per_epoch=0``), so env steps cannot size it.
    """
    sched = config.schedule
    if sched.train_timesteps_per_epoch == 0:
        msg = (
            "this run collects no env steps (schedule.train_timesteps_per_epoch=0), so --steps cannot size it; "
            "set schedule.epochs and schedule.train_batches_per_epoch instead."
        )
        raise BudgetError(msg)
    sized: dict[str, Any] = {"schedule": {}, "rollout": {}, "optim": {}, "logging": {}, "replay": {}}
    actors = config.rollout.parallel_actors
    if smoke and not is_set(user, "rollout", "parallel_actors"):
        actors = min(actors, SMOKE_ACTORS)
        sized["rollout"]["parallel_actors"] = actors
    pool_steps = max(1, math.ceil(env_steps / actors))
    min_epochs = 2 if smoke else MIN_EPOCHS
    old_epochs, old_steps, old_batches = (
        sched.epochs,
        sched.train_timesteps_per_epoch,
        sched.train_batches_per_epoch,
    )
    if is_set(user, "schedule", "epochs"):
        epochs = old_epochs
        steps = (
            old_steps
            if is_set(user, "schedule", "train_timesteps_per_epoch")
            else math.ceil(pool_steps / epochs)
        )
    elif is_set(user, "schedule", "train_timesteps_per_epoch"):
        steps = old_steps
        epochs = max(1, math.ceil(pool_steps / steps))
    else:
        steps = min(old_steps, max(1, pool_steps // min_epochs))
        # --smoke must reach the end of its episode: never fewer steps than asked.
        epochs = max(1, math.ceil(pool_steps / steps) if smoke else round(pool_steps / steps))
    batches = old_batches
    if not is_set(user, "schedule", "train_batches_per_epoch") and old_batches > 0:
        # --smoke plays a whole episode but keeps the updates of its 8-step epochs: seconds, not minutes.
        paced = min(steps, SMOKE_STEPS_PER_ACTOR // 2) if smoke else steps
        batches = max(1, round(old_batches * paced / old_steps))
    sized["schedule"].update(epochs=epochs, train_timesteps_per_epoch=steps, train_batches_per_epoch=batches)
    sized["schedule"].update(_validation(config, user, epochs, epochs * steps, smoke))

    epoch_ratio = epochs / old_epochs
    for key in ("start_learning_at_epoch", "start_collecting_at_epoch"):
        value = getattr(sched, key)
        if value and not is_set(user, "schedule", key):
            sized["schedule"][key] = min(epochs - 1, round(value * epoch_ratio))
    if sched.ckpt_interval and not is_set(user, "schedule", "ckpt_interval"):
        checkpoints = max(1, min(4, old_epochs // sched.ckpt_interval))
        sized["schedule"]["ckpt_interval"] = max(1, math.ceil(epochs / checkpoints))
    updates, old_updates = epochs * batches, old_epochs * old_batches
    if old_updates and not is_set(user, "optim", "lr_warmup_steps"):
        sized["optim"]["lr_warmup_steps"] = round(config.optim.lr_warmup_steps * updates / old_updates)
    if not is_set(user, "logging", "log_interval"):
        sized["logging"]["log_interval"] = max(1, min(config.logging.log_interval, updates // 20))
    if smoke and not is_set(user, "optim", "batch_size"):
        sized["optim"]["batch_size"] = min(config.optim.batch_size, 4)
    sized.update(_data_in_time(config, user, epochs * steps, smoke))

    step_ratio = (epochs * steps) / (old_epochs * old_steps)
    for slot in SLOT_KEYS:
        component = config.component(slot)
        if component is None:
            continue
        options = {**component.follow_step_budget(step_ratio), **(component.smoke_options() if smoke else {})}
        options = {k: v for k, v in options.items() if k not in _user_options(user, slot)}
        if options:
            sized[slot] = {"kind": component.kind, **options}
    sized = {section: table for section, table in sized.items() if table}
    return deep_merge(sized, window_within_files(config, sized, user))


def apply_sizing(
    config: ExperimentConfig, sized: Mapping[str, Any], *, registries: Registries | None = None
) -> ExperimentConfig:
    """``config`` with the sized settings merged in, validated and resolved against ``registries`` (default:
    the process-wide registries; pass the ones ``config`` was validated against)."""
    merged = deep_merge(config.model_dump(mode="json"), sized)
    return ExperimentConfig.validate_with(merged, registries).resolved(registries)


def describe_schedule(config: ExperimentConfig) -> str:
    """One line saying what a sized run will do."""
    sched, actors = config.schedule, config.rollout.parallel_actors
    steps = sched.epochs * sched.train_timesteps_per_epoch * actors
    val = (
        f"validation every {sched.val_interval} epoch(s) x {sched.val_timesteps_per_epoch:,} steps"
        if sched.val_interval and sched.val_timesteps_per_epoch
        else "no validation"
    )
    return (
        f"{sched.epochs} epochs x {sched.train_timesteps_per_epoch:,} steps x {actors} actors = {steps:,} env steps, "
        f"{sched.train_batches_per_epoch:,} updates per epoch ({sched.epochs * sched.train_batches_per_epoch:,} in all), {val}, "
        f"sequences of {config.run.max_seq_len} steps saved in files of {config.replay.traj_save_len}"
    )
