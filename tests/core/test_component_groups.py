"""Component groups: a spec's ``group`` is a ``ComponentGroup``; the string plugins pass is still accepted."""

from __future__ import annotations

import warnings
from typing import Literal

import pytest

from amago_core.config import ComponentConfig
from amago_core.config.experiment import SLOT_KEYS
from amago_core.config.sources import COMPONENT_KEYS
from amago_core.plugins import GROUPS, RELABELERS, ComponentGroup, ComponentSpec, InvalidSpecError, find_group
from amago_core.plugins.spec import BrokenSpec, defer_spec_errors


class DotConfig(ComponentConfig):
    kind: Literal["dot"] = "dot"
    """Registered name."""


def dot_spec(group: object) -> ComponentSpec:
    return ComponentSpec(name="dot", group=group, summary="s", config=DotConfig, factory="m:f")


def test_a_group_is_the_string_of_its_entry_point_group() -> None:
    for group in GROUPS:
        assert group == group.entry_point_group == group.value
        assert f"{group}" == str(group) == group.entry_point_group
        assert find_group(group.cli_name) is find_group(group.key) is find_group(str(group)) is group
    assert ComponentGroup.TRAJ_ENCODERS.cli_name == "traj-encoders"
    assert ComponentGroup.ENV_SUITES.key == "env"
    assert not hasattr(ComponentGroup.AGENTS, "cli_kind")  # the 0.1 alias of cli_name is gone


def test_a_spec_takes_a_group_or_its_entry_point_string() -> None:
    assert dot_spec(ComponentGroup.AGENTS).group is ComponentGroup.AGENTS
    from_string = dot_spec("amago.agents")
    assert from_string.group is ComponentGroup.AGENTS
    assert from_string.group == "amago.agents"  # plugins that compare with the string keep working
    assert from_string.model_dump(mode="json", include={"group"}) == {"group": "amago.agents"}


def test_an_unknown_group_string_fails_in_one_line() -> None:
    with pytest.raises(InvalidSpecError) as excinfo:
        dot_spec("amago.agent")
    message = str(excinfo.value)
    assert "\n" not in message
    assert message.startswith("spec 'dot': unknown group 'amago.agent'. Did you mean 'amago.agents'?")
    assert "amago.traj_encoders" in message


def test_an_unknown_group_breaks_only_its_own_spec_while_a_module_loads() -> None:
    with warnings.catch_warnings(), defer_spec_errors():
        broken = dot_spec("agents")
    assert isinstance(broken, BrokenSpec)
    assert "unknown group 'agents'" in broken.problem


def test_every_group_key_names_a_config_slot() -> None:
    # ComponentGroup.key is the slot's name: the top-level slots, and the relabeler's inside `replay`.
    assert set(COMPONENT_KEYS) == {group.key for group in GROUPS} == {*SLOT_KEYS, RELABELERS.key}
