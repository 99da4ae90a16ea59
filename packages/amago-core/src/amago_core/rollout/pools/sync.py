"""``SyncPool``: every env in this process, stepped one after the other (the default; easy to debug).

When the creators are ``EnvCreator``s that differ only in ``make_env`` and ``seed`` (the usual case), the envs
are stacked into one batched env (:class:`~amago_core.rollout.pools.stacked.StackedEnv`) under a single exploration
wrapper, writer and ``SequenceEnv``, so per-step bookkeeping runs once per batch instead of once per env.
Other creators (or ``AMAGOEnv`` subclasses that override ``step``/``reset`` rather than the ``inner_*``
hooks) get one ``SequenceEnv`` each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeGuard, cast

import numpy as np

from amago_core.data.timestep import Timestep
from amago_core.rollout.creator import EnvCreator
from amago_core.rollout.env import AMAGOEnv
from amago_core.rollout.pools.base import VectorPool, concat_results, merge_stats, raise_named
from amago_core.rollout.pools.stacked import StackedEnv
from amago_core.rollout.sequence import SequenceEnv, StepResult


def _same_callable(a: Any, b: Any) -> bool:
    if isinstance(a, partial) and isinstance(b, partial):
        return a.func == b.func and a.args == b.args and a.keywords == b.keywords
    return a == b


def _stackable(env_fns: Sequence[Callable[[], SequenceEnv]]) -> TypeGuard[Sequence[EnvCreator]]:
    creators = [fn for fn in env_fns if isinstance(fn, EnvCreator)]
    if len(creators) != len(env_fns):
        return False
    head = creators[0]
    return all(
        _same_callable(fn.exploration, head.exploration)
        and (fn.save_dir, fn.save_as, fn.traj_save_len, fn.stagger)
        == (head.save_dir, head.save_as, head.traj_save_len, head.stagger)
        for fn in creators[1:]
    )


def _call_env(row: int, env: Any, call: str, fn: Callable[[], Any]) -> Any:
    """``fn()``, with what the env raised turned into one line naming the env and the call."""
    try:
        return fn()
    except Exception as exc:
        raise_named(exc, row, env, call)


def _uses_inner_hooks_only(env: AMAGOEnv) -> bool:
    cls = type(env)
    return env.batched_envs == 1 and cls.step is AMAGOEnv.step and cls.reset is AMAGOEnv.reset


class SyncPool(VectorPool):
    """Envs built and stepped in-process.

    Args:
        env_fns: one callable per env, each returning a ``SequenceEnv`` (e.g. an ``EnvCreator``).
        stack: allow stacking compatible envs into one batch (see module docstring); False forces one
            ``SequenceEnv`` per env.
    """

    def __init__(self, env_fns: Sequence[Callable[[], SequenceEnv]], stack: bool = True) -> None:
        if not env_fns:
            msg = "a pool needs at least one env creator."
            raise ValueError(msg)
        stacked_envs = self._build_stacked(env_fns) if stack and _stackable(env_fns) else None
        self.envs: list[SequenceEnv] = (
            stacked_envs
            if stacked_envs is not None
            else [_call_env(i, None, "make_env", fn) for i, fn in enumerate(env_fns)]
        )
        self._rows = [e.batched_envs for e in self.envs]
        self._offsets = np.cumsum([0, *self._rows])
        self.num_envs = int(self._offsets[-1])

    @property
    def stacked(self) -> bool:
        """True when the envs run as one stacked batch."""
        return isinstance(self.envs[0].env, StackedEnv) or isinstance(
            getattr(self.envs[0].env, "env", None), StackedEnv
        )

    @staticmethod
    def _build_stacked(creators: Sequence[EnvCreator]) -> list[SequenceEnv] | None:
        envs = [_call_env(i, None, "make_env", c.make_env) for i, c in enumerate(creators)]
        if not all(isinstance(e, AMAGOEnv) and _uses_inner_hooks_only(e) for e in envs):
            for e in envs:
                e.close()
            return None
        # StackedEnv is not an AMAGOEnv subclass but offers every part of its interface that SequenceEnv uses.
        return [creators[0]._wrap(cast(AMAGOEnv, StackedEnv(envs)))]

    def reset(self, seed: int | None = None) -> Timestep:
        starts = self._offsets[:-1]
        return Timestep.concat(
            [
                _call_env(i, e, "reset", partial(e.reset, seed=None if seed is None else seed + int(o)))
                for i, (e, o) in enumerate(zip(self.envs, starts, strict=True))
            ]
        )

    def step(self, actions: Any) -> StepResult:
        """Steps every env with its slice of ``actions``."""
        actions = np.asarray(actions)
        if len(actions) != self.num_envs:
            msg = f"got {len(actions)} actions for {self.num_envs} env rows; pass one per row (leading dim)."
            raise ValueError(msg)
        if len(self.envs) == 1:  # a stacked pool: StackedEnv names the row that raised
            return _call_env(0, self.envs[0], "step", partial(self.envs[0].step, actions))
        off = self._offsets
        return concat_results(
            [
                _call_env(i, e, "step", partial(e.step, actions[off[i] : off[i + 1]]))
                for i, e in enumerate(self.envs)
            ]
        )

    def stats(self) -> dict[str, Any]:
        return merge_stats([e.stats() for e in self.envs])

    def reset_stats(self) -> None:
        for e in self.envs:
            e.reset_stats()

    def save_finished_trajs(self) -> list[Path]:
        return [p for e in self.envs for p in e.save_finished_trajs()]

    def close(self) -> None:
        for e in self.envs:
            e.close()
