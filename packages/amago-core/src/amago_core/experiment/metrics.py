"""Policy metrics from env histories, with AMAGO's names (seeds: "Track the Results")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

AVERAGE_RETURN_KEY = "Average Total Return (Across All Env Names)"


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
