"""Torch-free specs of amago-envs' relabelers (what ``amago list relabelers`` loads): ``hindsight`` for MazeRunner.

A run picks one with ``replay.relabeler`` (``amago run --env mazerunner -o replay.relabeler=hindsight``).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import field_validator

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec

GROUP = "amago.relabelers"


class HindsightConfig(ComponentConfig):
    """Hindsight instruction relabeling of MazeRunner episodes (AMAGO's example 13): cells the agent happened to
    reach become goals it was asked to reach, and MazeRunner's reward rule is replayed on the new goals.

    Needs the mazerunner suite's dict observations (``env.relabel_info``, on by default) and one episode per
    trajectory file (``replay.traj_save_len`` above ``env.time_limit``, which it is unless a step budget or
    ``--smoke`` shortens the files). The number of goals comes from the env (or, for envs built in Python, from
    each file's ``goals`` key).
    """

    # `seed`: the run's seed, drawn apart per process (each dataloader worker derives its own stream from it);
    # `env`: the run's env suite config (None for envs made in Python), checked and read for its goal count.
    inferred_context: ClassVar[tuple[str, ...]] = ("seed", "env")

    kind: Literal["hindsight"] = "hindsight"
    """Registered name of this relabeler."""
    strategy: Literal["all", "some", "none"] = "some"
    """How many reached cells become extra goals when the agent completed ``n`` of ``k`` goals: ``all`` adds
    ``k - n`` (every relabeled episode succeeds), ``some`` a uniform count in ``[0, k - n]`` (AMAGO's default),
    ``none`` none (the episodes train as collected)."""
    drop_achieved: bool = False
    """Remove the ``achieved`` key (the agent's cell, which ``obs`` already holds) from relabeled episodes, as
    AMAGO does. Only for timestep encoders whose ``obs_keys`` leave it out (example 13 reads ``obs`` and
    ``goals``): the default encoder reads every key the env observes, so by default the key stays."""

    @field_validator("strategy", mode="before")
    @classmethod
    def _null_is_none(cls, value: object) -> object:
        # `-o replay.relabeler.strategy=none` reads the word as null, like every override value.
        return "none" if value is None else value


HINDSIGHT = ComponentSpec(
    name="hindsight",
    group=GROUP,
    summary="MazeRunner hindsight instruction relabeling: reached cells become goals (AMAGO's example 13).",
    config=HindsightConfig,
    factory="amago_envs.suites.mazerunner_relabel:build_hindsight_relabeler",
)
