"""Size a preset's schedule to a number of env steps: the arithmetic (torch-free) under ``--smoke`` and
amago-tools' ``--steps`` / wall-time ``--budget`` (through the ``amago_plan_run`` hook).

AMAGO's presets are written for GPU nodes (Meta-World ML45: 1000 epochs of 1000 steps and 1000 updates).
Sizing keeps what makes the preset *that* preset and shrinks how long it runs:

- **update-to-data ratio**: updates per epoch scale with env steps per epoch;
- **epochs**: at least :data:`MIN_EPOCHS` (a learning curve, checkpoints, resumable state), steps per epoch
  shrink first;
- **validation** (the epoch-0 pass included): at most :data:`VAL_SHARE` of the train env steps, at least one
  whole episode per val env where the suite knows its episode length; fewer passes before shorter ones, but
  always two after learning starts (epoch 0's is the untrained policy's);
- **schedules counted in steps** (exploration annealing, lr warm-up, ``start_*_at_epoch``, checkpoints) keep
  their share of the run; each component says which of its own options are counted in env steps
  (:meth:`~amago_core.config.component.ComponentConfig.follow_step_budget`).

Settings the user set themselves are never changed; they constrain the rest (``-o schedule.epochs=50 --steps
1e5`` keeps 50 epochs and sizes the steps per epoch).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.experiment import SLOT_KEYS, ExperimentConfig
from amago_core.config.lengths import window_within_files
from amago_core.config.sources import deep_merge, is_set
from amago_core.plugins.registry import Registries

MIN_EPOCHS = 10
"""Fewest epochs a budget is split into (``--smoke``: 2)."""
MAX_VAL_PASSES = 10
"""Most validation passes a budget schedules (the epoch-0 pass included)."""
VAL_SHARE = 0.2
"""Most env steps validation may take, as a share of the train env steps."""
DATA_BY = 4
"""Training data must exist within the first 1/DATA_BY of a sized run's env steps (see ``_data_in_time``)."""
DATA_BY_MEMORY = 2
"""The same for a suite that needs whole episodes in memory: whole episodes are kept while one fits in the
first 1/DATA_BY_MEMORY of the run (see ``_data_in_time``; amago-tools reads it to say what a budget cut)."""
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
    config: ExperimentConfig,
    user: Mapping[str, Any],
    epochs: int,
    pool_steps: int,
    smoke: bool,
    learning_starts: int,
) -> dict[str, Any]:
    sched = config.schedule
    if sched.val_interval is None or sched.val_timesteps_per_epoch == 0:
        return {}
    env = config.component("env")
    episode = env.eval_episode_steps() if isinstance(env, EnvSuiteConfig) else None
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
    interval = max(1, math.ceil(epochs / passes))
    if not smoke:  # epoch 0's pass is the untrained policy's: two more come after learning starts
        interval = max(1, min(interval, (epochs - 1 - learning_starts) // 2))
    return {"val_timesteps_per_epoch": steps, "val_interval": interval}


def memory_episode_steps(config: ExperimentConfig) -> int | None:
    """Steps of one episode when ``config``'s suite needs whole episodes in memory (``whole_episode_memory``),
    else None."""
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
    asks it to recall; below that the memory is cut (amago-tools' ``--steps`` and ``--budget`` say so).
    ``--smoke`` (a few steps, an end-to-end check) always cuts.
    """
    env = config.component("env")
    episode = env.episode_steps() if isinstance(env, EnvSuiteConfig) else None
    first_file = min(config.replay.traj_save_len, episode or config.replay.traj_save_len)
    if smoke:
        within = pool_steps // 2
    else:
        if memory_episode_steps(config) is not None and first_file <= pool_steps // DATA_BY_MEMORY:
            return {}
        within = pool_steps // DATA_BY
    within = max(1, within)
    if first_file <= within or is_set(user, "replay", "traj_save_len"):
        return {}
    return {"replay": {"traj_save_len": within}}  # the window follows in window_within_files


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
    old_epochs, old_steps = sched.epochs, sched.train_timesteps_per_epoch
    old_batches = sched.train_batches_per_epoch
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
    epoch_ratio = epochs / old_epochs
    for key in ("start_learning_at_epoch", "start_collecting_at_epoch"):
        value = getattr(sched, key)
        if value and not is_set(user, "schedule", key):
            sized["schedule"][key] = min(epochs - 1, round(value * epoch_ratio))
    learning_starts = sized["schedule"].get("start_learning_at_epoch", sched.start_learning_at_epoch)
    sized["schedule"].update(_validation(config, user, epochs, epochs * steps, smoke, learning_starts))
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
        options = {k: v for k, v in options.items() if not is_set(user, slot, k)}
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
