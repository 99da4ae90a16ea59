"""The one rule between the training window and the trajectory files it is sampled from.

A window longer than its files would never be filled (``ExperimentConfig`` refuses it), so whatever changes
lengths on a user's behalf (``--budget``/``--steps`` sizing, the calibration probe, episode following) asks
:func:`window_within_files` what else must change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.sources import is_set


def longest_sample(config: ExperimentConfig) -> int:
    """The most timesteps one sampled sequence holds: the window, cut to the files, and to one episode.

    A trajectory file ends with its episode, so a task of 52-step episodes trains on 53-timestep sequences
    (the first observation included) even under POPGym's 2000-step window. What an update costs, and so how
    far a ``--budget`` stretches, follows this length, not ``run.max_seq_len``.
    """
    longest = min(config.run.max_seq_len, config.replay.traj_save_len)
    env = config.component("env")
    episode = env.episode_steps() if isinstance(env, EnvSuiteConfig) else None
    return min(longest, episode + 1) if episode else longest


def window_within_files(
    config: ExperimentConfig, sized: Mapping[str, Any], user: Mapping[str, Any]
) -> dict[str, Any]:
    """What to add to ``sized`` so that its windows fit its files (``replay.traj_save_len >= run.max_seq_len``).

    The longer one yields to what the user set: a window the user did not set is cut to the files; else files
    the user did not set grow to the window. Both set by the user stay (their own conflict, which validation
    reports in their terms).

    Args:
        config: the config ``sized`` will be merged over.
        sized: the changes to merge (a config tree, as :func:`size_schedule` returns).
        user: the user's own sources merged; what they set is never changed.

    Returns:
        A config tree with at most one of ``run.max_seq_len`` and ``replay.traj_save_len``; empty when they fit.
    """

    def final(section: str, key: str) -> int:
        for tree in (user, sized):  # the user's value wins, then the change's, then the config's
            table = tree.get(section)
            if isinstance(table, Mapping) and key in table:
                return int(table[key])
        return int(getattr(getattr(config, section), key))

    window, files = final("run", "max_seq_len"), final("replay", "traj_save_len")
    if window <= files:
        return {}
    if not is_set(user, "run", "max_seq_len"):
        return {"run": {"max_seq_len": files}}
    if not is_set(user, "replay", "traj_save_len"):
        return {"replay": {"traj_save_len": window}}
    return {}
