"""AMAGO's ``Metaworld``: amago-envs' ``KShotMetaworld`` (Meta-World v3) in an ``AMAGOEnv``, AMAGO's constructor."""

from __future__ import annotations

import re

from amago_core.rollout.env import AMAGOEnv
from amago_envs.suites.metaworld.kshot import KShotMetaworld


def benchmark_of(benchmark_name: str) -> str:
    """amago's benchmark id of AMAGO's ``benchmark_name``: ``ml10``/``ml45`` as they are, a task name
    (``reach-v2``, AMAGO's ML1) as ``ml1-reach-v3`` (the installed Meta-World has the v3 tasks only)."""
    if benchmark_name in ("ml10", "ml45"):
        return benchmark_name
    return "ml1-" + re.sub(r"-v2$", "-v3", benchmark_name)


class Metaworld(AMAGOEnv):
    """AMAGO's ``Metaworld(benchmark_name, split, k_episodes)``: a random task of the benchmark per meta-episode,
    ``k_episodes`` trials of at most 500 steps on it, named by the current Meta-World task (per-task metrics);
    ``Trial {i} Success`` and ``Total Successes`` are logged.

    Args:
        benchmark_name: ``ml10``, ``ml45``, or a task for ML1 (``reach-v2``; AMAGO's v2 names run the same task's
            v3 version, the one the installed Meta-World has).
        split: ``train`` or ``test``.
        k_episodes: trials per meta-episode.
        k_shots: the same as ``k_episodes`` (AMAGO's examples 07 and 11 pass this older name).

    Raises:
        ValueError: an unknown benchmark or split.
    """

    def __init__(
        self, benchmark_name: str, split: str, k_episodes: int | None = None, *, k_shots: int | None = None
    ):
        k = _k_episodes(k_episodes, k_shots, "Metaworld")
        # benchmark_seed=None: new goals per process, as AMAGO's metaworld.ML1(name) / ML45() drew them.
        env = KShotMetaworld(benchmark_of(benchmark_name), split=split, k_episodes=k, benchmark_seed=None)
        super().__init__(env, env_name=None)


def _k_episodes(k_episodes: int | None, k_shots: int | None, owner: str) -> int:
    """The attempts per task from AMAGO's ``k_episodes`` or its examples' ``k_shots`` (one of them).

    Raises:
        TypeError: both or neither given.
    """
    if (k_episodes is None) == (k_shots is None):
        msg = f"{owner}: give k_episodes (or its older name k_shots), not both or neither"
        raise TypeError(msg)
    return int(k_episodes if k_episodes is not None else k_shots)  # type: ignore[arg-type]


__all__ = ["Metaworld", "benchmark_of"]
