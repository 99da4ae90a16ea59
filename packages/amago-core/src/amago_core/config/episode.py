"""Presets follow the env: settings written for one episode length follow the length the user's env options give.

A preset (or the main job) is written for its suite's default options: T-Maze's sequence length is one episode of
the 10-cell corridor, and with ``env.corridor_length=20`` it must grow or the agent cannot see the start of its
own episode. For every setting the preset (or job) set and the user did not:

- a core length (:data:`EPISODE_COUNTED`) that covered at least one whole episode keeps covering the same number
  of episodes (scaled by new/old length, rounded); a shorter one is a window chosen on purpose and stays;
- ``schedule.train_batches_per_epoch`` scales with the train timesteps, so the update-to-data ratio holds;
- each component config says which of its own options are counted in episode steps
  (:meth:`~amago_core.config.component.ComponentConfig.follow_episode_length`).
"""

from __future__ import annotations

import copy
import operator
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.experiment import SLOT_KEYS, ExperimentConfig
from amago_core.config.lengths import window_within_files
from amago_core.config.slots import validation_context
from amago_core.config.sources import deep_merge, is_set, slot_kind

if TYPE_CHECKING:
    from amago_core.plugins.registry import Registries

EPISODE_COUNTED: tuple[tuple[str, str], ...] = (
    ("run", "max_seq_len"),
    ("replay", "traj_save_len"),
    ("schedule", "train_timesteps_per_epoch"),
    ("schedule", "val_timesteps_per_epoch"),
)
"""Core settings that a preset may count in whole episodes."""


class ShortMemoryWarning(UserWarning):
    """``run.max_seq_len`` is shorter than one episode of a task that needs the whole episode in memory."""


def _env_as_base_wrote_it(
    base: Mapping[str, Any], env: EnvSuiteConfig, registries: Registries | None = None
) -> EnvSuiteConfig | None:
    """The env with only the base layer's own options (the ones its lengths were written for)."""
    table = base.get("env")
    options = (
        {k: v for k, v in table.items() if k not in ("id", "kind", "task")}
        if isinstance(table, Mapping)
        else {}
    )
    try:
        return type(env).model_validate(
            {**options, "kind": env.kind, "task": env.task}, context=validation_context(registries)
        )
    except ValueError:
        return None  # the base layer's env options do not fit this suite: nothing to compare with


def episode_lengths(
    base: Mapping[str, Any],
    config: ExperimentConfig,
    registries: Registries | None = None,
    *,
    evaluation: bool = False,
) -> tuple[int, int] | None:
    """``(old, new)`` episode steps when the user's env options change the episode the base layer was written for
    (``evaluation``: a val episode's, :meth:`EnvSuiteConfig.eval_episode_steps`).

    ``registries``: where names are looked up (default: the process-wide registries).
    """
    env = config.component("env", registries)
    if not isinstance(env, EnvSuiteConfig):
        return None
    steps = operator.methodcaller("eval_episode_steps" if evaluation else "episode_steps")  # the suite's own
    new = steps(env)
    written_for = _env_as_base_wrote_it(base, env, registries)
    old = steps(written_for) if written_for is not None else None
    if new is None or old is None or new == old:
        return None
    return old, new


def follow_episode(
    base: Mapping[str, Any],
    user: Mapping[str, Any],
    config: ExperimentConfig,
    *,
    registries: Registries | None = None,
) -> dict[str, Any] | None:
    """The base layer with its episode-counted settings moved to the episode length ``config``'s env gives.

    Args:
        base: the preset or main job that sits under the user's sources.
        user: the user's own sources merged (what they set themselves is never changed).
        config: the config resolved over ``base`` (its env carries the user's options).
        registries: where names are looked up (default: the process-wide registries).

    Returns:
        The new base layer, or None when the episode length did not change (or is unknown).
    """
    lengths = episode_lengths(base, config, registries)
    val_lengths = episode_lengths(base, config, registries, evaluation=True)
    if lengths is None and val_lengths is None:
        return None
    followed = copy.deepcopy(dict(base))
    for section, key in EPISODE_COUNTED:
        # The val horizon follows a val episode (more attempts per trial than training, for k_eval suites).
        counted_in = val_lengths if key == "val_timesteps_per_epoch" else lengths
        if counted_in is None:
            continue
        old, new = counted_in
        scale = new / old
        value = base[section][key] if is_set(base, section, key) else None
        if isinstance(value, int) and value >= old and not is_set(user, section, key):
            followed[section][key] = max(1, round(value * scale))
            if key == "train_timesteps_per_epoch":
                batches = base[section].get("train_batches_per_epoch")
                if isinstance(batches, int) and not is_set(user, section, "train_batches_per_epoch"):
                    followed[section]["train_batches_per_epoch"] = max(
                        int(batches > 0), round(batches * scale)
                    )
    followed = deep_merge(followed, window_within_files(config, followed, user))
    for slot in SLOT_KEYS:
        component = config.component(slot, registries)
        if component is None or slot == "env" or lengths is None:
            continue
        updates = {
            k: v for k, v in component.follow_episode_length(*lengths).items() if not is_set(user, slot, k)
        }
        if not updates:
            continue
        table = followed.get(slot)
        own = dict(table) if isinstance(table, Mapping) and slot_kind(table, slot) == component.kind else {}
        followed[slot] = {**own, "kind": component.kind, **updates}
    return followed


def warn_if_memory_too_short(config: ExperimentConfig) -> None:
    """One :class:`ShortMemoryWarning` line when ``run.max_seq_len`` cannot hold one episode of a memory task."""
    env = config.component("env")
    if not isinstance(env, EnvSuiteConfig) or not type(env).whole_episode_memory:
        return
    steps = env.episode_steps()
    if steps is None or config.run.max_seq_len >= steps:
        return
    name = env.kind.replace("_", "-") + (f"-{env.task}" if env.task else "")
    warnings.warn(
        f"run.max_seq_len={config.run.max_seq_len} is shorter than one episode of {name} ({steps} steps with "
        f"these env options), so the agent cannot remember the start of its episode; set "
        f"-o run.max_seq_len={steps} (and replay.traj_save_len >= {steps}).",
        ShortMemoryWarning,
        stacklevel=3,
    )
