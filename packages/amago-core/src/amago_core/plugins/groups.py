"""The component groups amago knows, with their entry-point groups and CLI names.

One word throughout: a *group* is a family of components (`amago list traj-encoders`); a component's *kind*
is its registered name (`traj_encoder = {kind = "mamba"}`).
"""

from __future__ import annotations

import enum

from amago_core.suggest import did_you_mean


class ComponentGroup(enum.StrEnum):
    """One group of pluggable components.

    A member is the string of its entry-point group (``ComponentGroup.TRAJ_ENCODERS == "amago.traj_encoders"``),
    so a spec may still name its group by that string, and code that compares a spec's group with one keeps
    working.

    Attributes:
        key: python-friendly identifier, also the experiment-config slot name (``traj_encoder``; the
            relabeler's slot sits in the replay section: ``replay.relabeler``).
        entry_point_group: the ``importlib.metadata`` group plugins register under (the member's value).
        cli_name: what users type after ``amago list`` (``traj-encoders``).
        label: human name for messages (``trajectory encoder``).
    """

    key: str
    cli_name: str
    label: str

    TRAJ_ENCODERS = ("amago.traj_encoders", "traj_encoder", "traj-encoders", "trajectory encoder")
    TSTEP_ENCODERS = ("amago.tstep_encoders", "tstep_encoder", "tstep-encoders", "timestep encoder")
    AGENTS = ("amago.agents", "agent", "agents", "agent")
    EXPLORATIONS = ("amago.explorations", "exploration", "explorations", "exploration wrapper")
    ENV_SUITES = ("amago.env_suites", "env", "envs", "env suite")
    RELABELERS = ("amago.relabelers", "relabeler", "relabelers", "relabeler")
    """Rewrite stored trajectories as training loads them (hindsight relabeling). Their config slot is
    ``replay.relabeler``, inside the replay section, rather than a top-level field like the other groups'."""

    def __new__(cls, entry_point_group: str, key: str, cli_name: str, label: str) -> ComponentGroup:
        member = str.__new__(cls, entry_point_group)
        member._value_ = entry_point_group
        member.key = key
        member.cli_name = cli_name
        member.label = label
        return member

    @property
    def entry_point_group(self) -> str:
        """The ``importlib.metadata`` group plugins register under (``amago.traj_encoders``)."""
        return self.value


TRAJ_ENCODERS = ComponentGroup.TRAJ_ENCODERS
TSTEP_ENCODERS = ComponentGroup.TSTEP_ENCODERS
AGENTS = ComponentGroup.AGENTS
EXPLORATIONS = ComponentGroup.EXPLORATIONS
ENV_SUITES = ComponentGroup.ENV_SUITES
RELABELERS = ComponentGroup.RELABELERS

GROUPS: tuple[ComponentGroup, ...] = tuple(ComponentGroup)
"""Every group, in listing order."""


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


def group_of_spec(value: object) -> ComponentGroup:
    """A spec's ``group=``: a :class:`ComponentGroup`, or its entry-point group as a string (``"amago.agents"``).

    Raises:
        ValueError: a string that is no entry-point group (one line, with the closest one and every group).
    """
    if isinstance(value, ComponentGroup):
        return value
    for group in GROUPS:
        if value == group.entry_point_group:
            return group
    names = [group.entry_point_group for group in GROUPS]
    msg = (
        f"unknown group {value!r}.{did_you_mean(str(value), names)} Pass a ComponentGroup "
        f"(ComponentGroup.TRAJ_ENCODERS, ...) or its entry-point group: {', '.join(names)}."
    )
    raise ValueError(msg)


def cli_names_in_words(groups: tuple[ComponentGroup, ...] = GROUPS) -> str:
    """The groups' CLI names for a help line: ``traj-encoders, tstep-encoders, ..., envs or relabelers``."""
    names = [group.cli_name for group in groups]
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)
