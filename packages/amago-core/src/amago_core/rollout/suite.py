"""``EnvSuite``: what an env-suite plugin's factory returns, and all the experiment loop asks of it."""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from amago_core.rollout.env import AMAGOEnv

Split = Literal["train", "val", "test"]
"""Which data an env is made for: training, validation during training, or the final test."""


@runtime_checkable
class EnvSuite(Protocol):
    """A configured env suite (the object an ``amago.env_suites`` factory builds from its config).

    It must be picklable: the ``async`` pool ships ``suite.make_env`` to its worker processes.
    """

    def make_env(self, split: Split) -> AMAGOEnv:
        """Builds one fresh environment for ``split``, already wrapped in ``AMAGOEnv``."""
        ...
