"""The agents' entry points pass amago's conformance check and their configs validate."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from gymnasium import spaces
from pydantic import ValidationError

from amago_agents.specs import AGENT_CONTEXT, AgentConfig, MultiTaskAgentConfig
from amago_core.plugins import registries
from amago_core.testing import check_component

CONTEXT = {
    "obs_space": spaces.Dict({"observation": spaces.Box(-1.0, 1.0, (3,))}),
    "rl2_space": spaces.Box(-np.inf, np.inf, (1 + 4,)),
    "action_space": spaces.Discrete(4),
    "max_seq_len": 8,
    "tstep_encoder": registries().tstep_encoders.builder(
        {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 8}
    ),
    "traj_encoder": registries().traj_encoders.builder("identity"),
}


@pytest.mark.parametrize("name", ["agent", "multitask"])
def test_check_component(name: str) -> None:
    config = {"min_return": -10.0, "max_return": 10.0} if name == "multitask" else None
    report = check_component("agents", name, config=config, context=CONTEXT)
    assert "builds through its factory" in report.passed
    assert report.built.discrete


def test_inferred_context_is_documented() -> None:
    assert AgentConfig.inferred_context == AGENT_CONTEXT == MultiTaskAgentConfig.inferred_context
    assert set(AGENT_CONTEXT) == set(CONTEXT)


def test_defaults_are_amagos() -> None:
    agent, multitask = AgentConfig(), MultiTaskAgentConfig()
    assert agent.gammas == (0.1, 0.9, 0.95, 0.97, 0.99, 0.995, 0.999)
    assert (agent.num_critics, agent.num_critics_td, agent.tau, agent.reward_multiplier) == (
        4,
        2,
        0.003,
        10.0,
    )
    assert (agent.online_coeff, agent.offline_coeff) == (1.0, 0.1)
    assert (
        multitask.online_coeff,
        multitask.offline_coeff,
        multitask.num_actions_for_value_in_actor_loss,
    ) == (0.0, 1.0, 3)


def test_filter_tables_validate_by_type() -> None:
    config = AgentConfig.model_validate({"fbc_filter": {"type": "leaky_relu", "beta": 1.0}})
    assert config.fbc_filter.type == "leaky_relu"
    with pytest.raises(ValidationError):
        AgentConfig.model_validate({"fbc_filter": {"type": "exp", "threshold": 0.0}})
    with pytest.raises(ValidationError, match="did you mean"):
        AgentConfig.model_validate({"num_critic": 3})


def test_package_and_specs_import_without_torch() -> None:
    code = "import sys, amago_agents, amago_agents.specs; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
