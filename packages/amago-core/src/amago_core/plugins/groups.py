"""The component kinds amago knows, with their entry-point groups and CLI names."""

from __future__ import annotations

from dataclasses import dataclass

from amago_core.suggest import did_you_mean


@dataclass(frozen=True)
class ComponentGroup:
    """One kind of pluggable component.

    Attributes:
        key: python-friendly identifier, also the experiment-config section name (``traj_encoder``).
        entry_point_group: the ``importlib.metadata`` group plugins register under.
        cli_kind: what users type after ``amago list`` (``traj-encoders``).
        label: human name for messages (``trajectory encoder``).
    """

    key: str
    entry_point_group: str
    cli_kind: str
    label: str


TRAJ_ENCODERS = ComponentGroup("traj_encoder", "amago.traj_encoders", "traj-encoders", "trajectory encoder")
TSTEP_ENCODERS = ComponentGroup("tstep_encoder", "amago.tstep_encoders", "tstep-encoders", "timestep encoder")
AGENTS = ComponentGroup("agent", "amago.agents", "agents", "agent")
EXPLORATIONS = ComponentGroup("exploration", "amago.explorations", "explorations", "exploration wrapper")
ENV_SUITES = ComponentGroup("env", "amago.env_suites", "envs", "env suite")

GROUPS: tuple[ComponentGroup, ...] = (TRAJ_ENCODERS, TSTEP_ENCODERS, AGENTS, EXPLORATIONS, ENV_SUITES)


def find_group(word: str) -> ComponentGroup:
    """Resolves a group from its CLI kind, key or entry-point group (``traj-encoders``, ``traj_encoder``, ...).

    Raises:
        ValueError: the word names no group; the message lists the kinds.
    """
    normalized = word.strip().lower().replace("_", "-")
    for group in GROUPS:
        names = {
            group.cli_kind,
            group.key.replace("_", "-"),
            group.entry_point_group,
            group.cli_kind.rstrip("s"),
        }
        if normalized in names or word in names:
            return group
    kinds = [g.cli_kind for g in GROUPS]
    msg = f"unknown component kind {word!r}.{did_you_mean(normalized, kinds)} Kinds: {', '.join(kinds)}."
    raise ValueError(msg)
