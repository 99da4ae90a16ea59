"""The component groups amago knows, with their entry-point groups and CLI names.

One word throughout: a *group* is a family of components (`amago list traj-encoders`); a component's *kind*
is its registered name (`traj_encoder = {kind = "mamba"}`).
"""

from __future__ import annotations

from dataclasses import dataclass

from amago_core.suggest import did_you_mean


@dataclass(frozen=True)
class ComponentGroup:
    """One group of pluggable components.

    Attributes:
        key: python-friendly identifier, also the experiment-config slot name (``traj_encoder``; the
            relabeler's slot sits in the replay section: ``replay.relabeler``).
        entry_point_group: the ``importlib.metadata`` group plugins register under.
        cli_name: what users type after ``amago list`` (``traj-encoders``).
        label: human name for messages (``trajectory encoder``).
    """

    key: str
    entry_point_group: str
    cli_name: str
    label: str

    @property
    def cli_kind(self) -> str:
        """Former name of :attr:`cli_name`, kept for plugins written against amago-core 0.1."""
        return self.cli_name


TRAJ_ENCODERS = ComponentGroup("traj_encoder", "amago.traj_encoders", "traj-encoders", "trajectory encoder")
TSTEP_ENCODERS = ComponentGroup("tstep_encoder", "amago.tstep_encoders", "tstep-encoders", "timestep encoder")
AGENTS = ComponentGroup("agent", "amago.agents", "agents", "agent")
EXPLORATIONS = ComponentGroup("exploration", "amago.explorations", "explorations", "exploration wrapper")
ENV_SUITES = ComponentGroup("env", "amago.env_suites", "envs", "env suite")
RELABELERS = ComponentGroup("relabeler", "amago.relabelers", "relabelers", "relabeler")
"""Rewrite stored trajectories as training loads them (hindsight relabeling). Their config slot is
``replay.relabeler``, inside the replay section, rather than a top-level field like the other groups'."""

GROUPS: tuple[ComponentGroup, ...] = (
    TRAJ_ENCODERS,
    TSTEP_ENCODERS,
    AGENTS,
    EXPLORATIONS,
    ENV_SUITES,
    RELABELERS,
)


def find_group(word: str) -> ComponentGroup:
    """Resolves a group from any of its spellings: ``traj-encoders``, ``traj_encoder``, ``amago.traj_encoders``.

    Raises:
        ValueError: the word names no group; the message lists the groups.
    """
    normalized = word.strip().lower().replace("_", "-")
    for group in GROUPS:
        names = {
            group.cli_name,
            group.key.replace("_", "-"),
            group.entry_point_group,
            group.cli_name.rstrip("s"),
        }
        if normalized in names or word in names:
            return group
    group_names = [g.cli_name for g in GROUPS]
    msg = (
        f"unknown component group {word!r}.{did_you_mean(normalized, group_names)} "
        f"Groups: {', '.join(group_names)}."
    )
    raise ValueError(msg)
