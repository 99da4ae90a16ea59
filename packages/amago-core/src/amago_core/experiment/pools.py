"""The env pools of one process: each with its role (train / val / test) and its own seed stream.

A pool is seeded on its first reset only, so later evaluations continue its random stream and see new tasks
(lakes, mazes, goal sides) instead of replaying the first evaluation's. The train, val and test pools of a
process, and the pools of different processes, draw from separate streams: seeded alike, a val env would
replay its train twin's tasks and evaluation would score tasks the agent trained on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from amago_core.config.experiment import ExperimentConfig
from amago_core.data.timestep import Timestep
from amago_core.rollout import EnvCreator, EnvSuite, StepResult, VectorPool, make_pool

Role = Literal["train", "val", "test"]
ROLES: tuple[Role, ...] = ("train", "val", "test")
NEVER_SPLIT = 10**9
"""``traj_save_len`` values at or above this save whole episodes (AMAGO's default is 1e10)."""

EnvMakers = Callable[[], Any] | Sequence[Callable[[], Any]]
"""What the Python API takes for an env: one maker (repeated per actor) or one maker per actor."""

MakersWrapper = Callable[[list[Callable[[], Any]]], Sequence[Callable[[], Any]]]
"""Changes the env makers of one pool (one per actor), e.g. to record env 0 (``evaluate_test(wrap_test_makers=)``)."""


def makers_per_actor(make_env: EnvMakers, n: int, what: str) -> list[Callable[[], Any]]:
    """``make_env`` as ``n`` makers: a suite's own per-actor makers, one maker repeated, or the list as given.

    Raises:
        ValueError: a list whose length is not ``n``, or a suite that cannot split its envs among ``n`` actors.
    """
    if isinstance(make_env, SuiteEnvMaker):
        return make_env.for_actors(n)
    if callable(make_env):
        return [make_env] * n
    makers = list(make_env)
    if len(makers) != n:
        msg = f"{what} is a list of {len(makers)} env makers but parallel_actors is {n}; give one per actor."
        raise ValueError(msg)
    return makers


@dataclass(frozen=True)
class SuiteEnvMaker:
    """The env maker of one split of an env suite; picklable (``async`` pools ship it to their workers).

    Called, it builds one env with ``suite.make_env(split)``. A pool asks it for one maker per actor
    (:meth:`for_actors`), which a suite with ``actor_makers`` (a ``PerActorEnvSuite``) answers itself.

    Attributes:
        suite: the configured env suite.
        split: ``train``, ``val`` or ``test``.
        first_actor: the global index of this process's first actor (a Ray actor's share starts past those of
            the Ray actors before it).
        total_actors: how many actors share the suite's envs in all; None: the pool asking is all of them.
    """

    suite: EnvSuite
    split: Role
    first_actor: int = 0
    total_actors: int | None = None

    def __call__(self) -> Any:
        return self.suite.make_env(self.split)

    def share(self, first_actor: int, total_actors: int) -> SuiteEnvMaker:
        """This maker for the actors ``first_actor`` onwards of ``total_actors`` in all."""
        return replace(self, first_actor=first_actor, total_actors=total_actors)

    def for_actors(self, n: int) -> list[Callable[[], Any]]:
        """One maker per actor of a pool of ``n``: the suite's ``actor_makers`` if it has them, else this one.

        Raises:
            ValueError: the suite cannot split its envs among the actors, or ``n`` actors do not fit in this
                maker's share.
        """
        # Looked up, not isinstance(PerActorEnvSuite): a runtime protocol check caches a positive answer per
        # class, so a class that once had the method (patched in, say) would pass after it was removed.
        actor_makers = getattr(self.suite, "actor_makers", None)
        if not callable(actor_makers):
            return [self] * n
        total = n if self.total_actors is None else self.total_actors
        if self.first_actor + n > total:
            msg = (
                f"actors {self.first_actor}..{self.first_actor + n - 1} asked for envs but the suite's envs are "
                f"split among {total} actors; give every collector the same number of envs."
            )
            raise ValueError(msg)
        makers = list(actor_makers(self.split, total))
        if len(makers) != total:
            msg = (
                f"{type(self.suite).__name__}.actor_makers gave {len(makers)} env makers for {total} actors; "
                "it must give exactly one per actor."
            )
            raise ValueError(msg)
        return makers[self.first_actor : self.first_actor + n]


def suite_makers(suite: EnvSuite) -> dict[Role, SuiteEnvMaker]:
    """One picklable env maker per role from an env suite (expanded per actor by :func:`makers_per_actor`)."""
    return {role: SuiteEnvMaker(suite, role) for role in ROLES}


def actor_share(make_env: Any, first_actor: int, total_actors: int) -> Any:
    """``make_env`` for the actors ``first_actor`` onwards of ``total_actors`` in all (a Ray actor's envs).

    A suite's maker keeps its actors' global indices, so a suite that pins actors (to games...) pins them across
    Ray actors as it would in one pool; any other maker (the Python API's) is returned as it is.
    """
    if isinstance(make_env, SuiteEnvMaker):
        return make_env.share(first_actor, total_actors)
    return make_env


def first_reset_seed(seed: int | None, process: int, role: Role) -> int | None:
    """The seed of a pool's first reset (row i gets ``seed + i``); None when the run is not seeded."""
    if seed is None:
        return None
    if role == "train":
        return seed + 7919 * process
    stream = np.random.SeedSequence([seed, process, ROLES.index(role)])
    return int(stream.generate_state(1)[0] % 2**31)


def creator_seed(seed: int | None, process: int, role: Role, actor: int) -> int | None:
    """The seed of one actor's snippet lengths and exploration noise."""
    if seed is None:
        return None
    return seed * 10_000 + process * 1_000 + actor + (0 if role == "train" else 500)


class RolePool(VectorPool):
    """A vector pool that knows its role and seeds its own first reset with ``first_seed`` (None: unseeded)."""

    def __init__(self, pool: VectorPool, role: Role, first_seed: int | None):
        self.pool, self.role, self.first_seed = pool, role, first_seed
        self.num_envs = pool.num_envs
        self.seeded = False

    def reset(self, seed: int | None = None) -> Timestep:
        """Resets every row: with ``seed`` if given, else the first reset uses the pool's own seed."""
        if seed is None and not self.seeded:
            seed = self.first_seed
        self.seeded = True
        return self.pool.reset(seed=seed)

    def step(self, actions: Any) -> StepResult:
        return self.pool.step(actions)

    def stats(self) -> dict[str, Any]:
        return self.pool.stats()

    def reset_stats(self) -> None:
        self.pool.reset_stats()

    def save_finished_trajs(self) -> list[Path]:
        return self.pool.save_finished_trajs()

    def close(self) -> None:
        self.pool.close()

    def __getattr__(self, name: str) -> Any:
        # Anything else a concrete pool offers (``render``...) is the inner pool's.
        return getattr(self.__dict__["pool"], name)


def build_pool(
    config: ExperimentConfig,
    makers: Sequence[Callable[[], Any]],
    *,
    role: Role,
    process: int,
    save_dir: Path | None = None,
    exploration: Callable[..., Any] | None = None,
) -> RolePool:
    """An env pool for ``role``: one ``EnvCreator`` per maker, the rollout settings, the role's seeds.

    Args:
        makers: one env maker per actor (exactly one for ``already_vectorized``).
        role: which pool this is; only ``train`` explores (``exploration``: the wrapper's builder).
        process: this process's index (processes draw apart).
        save_dir: where finished trajectories go (None: not saved).
    """
    rollout, replay, seed = config.rollout, config.replay, config.run.seed
    max_seq_len = config.run.max_seq_len
    splits = replay.traj_save_len < NEVER_SPLIT
    creators = [
        EnvCreator(
            make_env=make,
            exploration=exploration if role == "train" else None,
            save_dir=save_dir,
            save_as=replay.save_trajs_as,
            traj_save_len=replay.traj_save_len if splits else None,
            # AMAGO staggers only snippets longer than a training window; whole-window files stay whole.
            stagger=max_seq_len
            if replay.stagger_traj_file_lengths and splits and max_seq_len < replay.traj_save_len
            else 0,
            seed=creator_seed(seed, process, role, i),
        )
        for i, make in enumerate(makers)
    ]
    pool = make_pool(
        rollout.env_mode,
        creators,
        start_method=rollout.async_env_mp_context,
        num_envs=rollout.parallel_actors,
    )
    return RolePool(pool, role, first_reset_seed(seed, process, role))
