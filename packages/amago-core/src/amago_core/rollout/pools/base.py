"""``VectorPool``: the interface every env pool offers the collector."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from amago_core.data.timestep import Timestep
from amago_core.rollout.sequence import StepResult


class EnvCallError(RuntimeError):
    """An env of the in-process pool raised in ``make_env``, ``reset`` or ``step``; the message names the env
    (its row and name) and the call, and the env's own exception is chained (``--debug`` shows its traceback)."""


def env_call_error(exc: Exception, row: int, env: Any, call: str) -> Exception:
    """``exc`` as one line naming the env and the call, or ``exc`` itself when amago raised it.

    amago's own errors (an env breaking the contract, non-finite data, a failed write into the run folder)
    already name the env or the file and say what to do, so they pass through unchanged.

    Args:
        exc: what the env raised.
        row: the env's index in the pool.
        env: the env (its ``env_name`` names it), its name, or None before it exists.
        call: what was called (``"step"``, ``"reset"``...).
    """
    if type(exc).__module__.startswith("amago"):
        return exc
    who = f"env {row}"
    if env is not None:
        try:
            who += f" ({env if isinstance(env, str) else env.env_name!r})"
        except Exception:  # naming the env must never hide what it raised
            who += f" ({type(env).__name__})"
    first = (str(exc).strip().splitlines() or [""])[0]
    raised = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return EnvCallError(
        f"{who} of the sync pool raised in {call}: {raised}. Fix the env, or rerun with --debug "
        "(AMAGO_DEBUG=1) for its traceback."
    )


def raise_named(exc: Exception, row: int, env: Any, call: str) -> NoReturn:
    """Raises :func:`env_call_error`'s one line (``exc`` chained to it), or ``exc`` itself when amago raised it."""
    named = env_call_error(exc, row, env, call)
    if named is exc:
        raise exc
    raise named from exc


def merge_stats(stats: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Merges ``SequenceEnv.stats()`` of several envs (lists are concatenated, counts summed)."""
    returns: dict[str, list[float]] = {}
    metrics: dict[str, dict[str, list[float]]] = {}
    frames_by_name: dict[str, int] = {}
    total = 0
    for s in stats:
        for name, values in s["return_history"].items():
            returns.setdefault(name, []).extend(values)
        for name, by_key in s["metric_history"].items():
            for key, values in by_key.items():
                metrics.setdefault(name, {}).setdefault(key, []).extend(values)
        for name, count in s["frames_by_env_name"].items():
            frames_by_name[name] = frames_by_name.get(name, 0) + count
        total += s["total_frames"]
    return {
        "return_history": returns,
        "metric_history": metrics,
        "total_frames": total,
        "frames_by_env_name": frames_by_name,
    }


def concat_results(results: Sequence[StepResult]) -> StepResult:
    """One ``StepResult`` with the rows of several, in order."""
    if len(results) == 1:
        return results[0]
    return StepResult(
        Timestep.concat([r.timestep for r in results]),
        np.concatenate([r.reward for r in results]),
        np.concatenate([r.terminated for r in results]),
        np.concatenate([r.truncated for r in results]),
    )


class VectorPool(ABC):
    """A batch of env rows stepped together. Row order is the order of the env creators.

    After :meth:`step`, rows that finished an episode already show the next episode's first observation.
    """

    num_envs: int
    """Total number of env rows."""

    @abstractmethod
    def reset(self, seed: int | None = None) -> Timestep:
        """Resets every row; returns the first policy input (row i seeded with ``seed + i`` when given)."""

    @abstractmethod
    def step(self, actions: Any) -> StepResult:
        """Steps every row with ``actions`` (leading dim ``num_envs``)."""

    @abstractmethod
    def stats(self) -> dict[str, Any]:
        """``return_history``, ``metric_history`` (per env name), ``total_frames``, ``frames_by_env_name``."""

    @abstractmethod
    def reset_stats(self) -> None:
        """Forgets return and metric histories."""

    @abstractmethod
    def save_finished_trajs(self) -> list[Path]:
        """Writes every finished trajectory; returns the written paths."""

    @abstractmethod
    def close(self) -> None:
        """Releases the envs (and processes)."""

    @property
    def return_history(self) -> dict[str, list[float]]:
        """Episode returns per env name."""
        return self.stats()["return_history"]

    @property
    def metric_history(self) -> dict[str, dict[str, list[float]]]:
        """``AMAGO_LOG_METRIC`` values per env name and metric."""
        return self.stats()["metric_history"]

    def __enter__(self) -> VectorPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
