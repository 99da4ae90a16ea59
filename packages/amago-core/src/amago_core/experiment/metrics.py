"""Policy metrics from env histories, with AMAGO's names (seeds: "Track the Results")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

AVERAGE_RETURN_KEY = "Average Total Return (Across All Env Names)"
EPISODIC_RETURN_KEY = "episodic_return"
"""``train/episodic_return``: the mean return of the train episodes that finished in an epoch (CleanRL's name; SB3
calls it ``ep_rew_mean``); ``episodic_return in {env name}`` per name."""
EPISODES_KEY = "episodes"
"""``train/episodes``: how many train episodes finished in the epoch (``episodes in {env name}`` per name)."""
WALL_TIME_KEY = "wall_time_seconds"
"""The x-axis of training wall time on every record: seconds ``Experiment.learn`` has run, summed over the
sessions of a resumed run (``amago compare --x minutes``). The name holds "time" and "seconds" so that the
checks that compare two runs' records (which drop timing columns) leave it out."""


def policy_metrics(stats: Mapping[str, Any]) -> dict[str, float]:
    """Per env name: average and bottom-quintile return, and the average of each env special metric.

    ``Average Total Return (Across All Env Names)`` is the mean of the per-name means (AMAGO's definition), so
    a frequent task does not drown out a rare one.

    Args:
        stats: a pool's merged ``stats()`` (``return_history``: name -> returns, ``metric_history``: name ->
            key -> values).
    """
    metrics: dict[str, float] = {}
    per_name_means = []
    for name, returns in sorted(stats.get("return_history", {}).items()):
        if not returns:
            continue
        values = np.asarray(returns, dtype=np.float64)
        mean = float(values.mean())
        per_name_means.append(mean)
        metrics[f"Average Total Return in {name}"] = mean
        metrics[f"Bottom Quintile Total Return in {name}"] = float(np.percentile(values, 20))
    for name, by_key in sorted(stats.get("metric_history", {}).items()):
        for key, values in sorted(by_key.items()):
            if values:
                metrics[f"Average {key} in {name}"] = float(np.mean(values))
    if per_name_means:
        metrics[AVERAGE_RETURN_KEY] = float(np.mean(per_name_means))
    return metrics


def finished_episodes(stats: Mapping[str, Any]) -> int:
    """Number of episodes in a pool's return history."""
    return sum(len(v) for v in stats.get("return_history", {}).values())


def train_return_metrics(return_histories: Iterable[Mapping[str, list[float]]]) -> dict[str, float]:
    """The epoch's training-episode returns: ``episodic_return`` and ``episodes``, overall and per env name.

    The overall return is the mean of the per-name means (as :data:`AVERAGE_RETURN_KEY`), so a frequent task
    does not drown out a rare one. Nothing when no train episode finished (a long episode spans epochs).

    Args:
        return_histories: each process's ``return_history`` of the epoch's collection (name -> returns).
    """
    merged: dict[str, list[float]] = {}
    for history in return_histories:
        for name, returns in history.items():
            merged.setdefault(name, []).extend(returns)
    metrics: dict[str, float] = {}
    per_name_means = []
    total = 0
    for name, returns in sorted(merged.items()):
        if not returns:
            continue
        mean = float(np.mean(returns))
        per_name_means.append(mean)
        total += len(returns)
        metrics[f"{EPISODIC_RETURN_KEY} in {name}"] = mean
        metrics[f"{EPISODES_KEY} in {name}"] = float(len(returns))
    if per_name_means:
        metrics[EPISODIC_RETURN_KEY] = float(np.mean(per_name_means))
        metrics[EPISODES_KEY] = float(total)
    return metrics
