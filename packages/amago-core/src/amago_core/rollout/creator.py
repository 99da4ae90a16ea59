"""``EnvCreator``: a picklable recipe that builds one actor's env stack in whichever process runs it.

Stack, outside in: ``SequenceEnv`` (same-step resets, recording, histories) -> exploration wrapper (optional)
-> ``AMAGOEnv`` -> the user's gymnasium env.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amago_core.data.files import SaveFormat
from amago_core.data.writer import TrajectoryWriter
from amago_core.rollout.env import AMAGOEnv
from amago_core.rollout.sequence import SequenceEnv


@dataclass
class EnvCreator:
    """Builds a ``SequenceEnv``; every field must be picklable for the ``async`` pool.

    Attributes:
        make_env: returns an ``AMAGOEnv``.
        exploration: wraps the ``AMAGOEnv`` (e.g. ``functools.partial(EGREEDY.build, config)``), called with
            ``env=`` and ``seed=``; None explores not at all (evaluation).
        save_dir: where finished trajectories go (None: not saved).
        save_as: ``npz``, ``npz-compressed`` or ``traj``.
        traj_save_len: snippet length for long rollouts (None: whole episodes).
        stagger: snippet lengths vary by up to this much (AMAGO: ``max_seq_len``).
        seed: seed of snippet lengths and exploration noise (None: fresh entropy).
    """

    make_env: Callable[[], AMAGOEnv]
    exploration: Callable[..., Any] | None = None
    save_dir: Path | None = None
    save_as: SaveFormat = "npz"
    traj_save_len: int | None = None
    stagger: int = 0
    seed: int | None = None

    def __call__(self) -> SequenceEnv:
        env = self.make_env()
        if not isinstance(env, AMAGOEnv):
            msg = f"make_env must return an AMAGOEnv; got {type(env).__name__}. Wrap it: AMAGOEnv(env, env_name=...)."
            raise TypeError(msg)
        return self._wrap(env)

    def _wrap(self, env: AMAGOEnv) -> SequenceEnv:
        """``env`` (one env, or the sync pool's stack of them) inside the exploration wrapper and recorder."""
        wrapped = self.exploration(env=env, seed=self.seed) if self.exploration is not None else env
        writer = TrajectoryWriter(
            env.batched_envs,
            self.save_dir,
            save_as=self.save_as,
            traj_save_len=self.traj_save_len,
            stagger=self.stagger,
            seed=self.seed,
        )
        return SequenceEnv(wrapped, writer)
