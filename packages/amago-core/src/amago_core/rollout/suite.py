"""``EnvSuite``: what an env-suite plugin's factory returns, and all the experiment loop asks of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol, runtime_checkable

from amago_core.rollout.env import AMAGOEnv

Split = Literal["train", "val", "test"]
"""Which data an env is made for: training, validation during training, or the final test."""


@runtime_checkable
class EnvSuite(Protocol):
    """A configured env suite (the object an ``amago.env_suites`` factory builds from its config).

    It must be picklable: the ``async`` pool ships ``suite.make_env`` to its worker processes.

    A suite may also give each actor an env of its own (see :class:`PerActorEnvSuite`): the loop then asks it for
    ``actor_makers(split, n_actors)`` instead of repeating ``make_env(split)``. It is optional; a suite without
    it gets ``make_env`` for every actor.
    """

    def make_env(self, split: Split) -> AMAGOEnv:
        """Builds one fresh environment for ``split``, already wrapped in ``AMAGOEnv``."""
        ...


@runtime_checkable
class PerActorEnvSuite(EnvSuite, Protocol):
    """An env suite whose actors differ, e.g. each one pinned to one game of a multi-game suite.

    The experiment loop builds every pool (train, val, test) of ``n`` actors from ``actor_makers(split, n)``.
    Actor indices are global: with Ray, actor ``k``'s ``envs_per_actor`` envs are the slice starting at
    ``k * envs_per_actor`` of ``actor_makers(split, ray.actors * envs_per_actor)``. In ``already_vectorized``
    mode the loop asks for one maker, whose env holds every row.
    """

    def actor_makers(self, split: Split, n_actors: int) -> Sequence[Callable[[], AMAGOEnv]]:
        """One picklable env maker per actor (module-level functions, ``functools.partial``, bound methods of
        the suite), actor ``i`` first at index ``i``.

        Raises:
            ValueError: the suite cannot split its envs among ``n_actors`` actors (one line naming valid counts).
        """
        ...
