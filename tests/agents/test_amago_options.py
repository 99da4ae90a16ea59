"""Options AMAGO has that the agents gained later: ``discrete_like_continuous`` and ``critic_init_value``.

Their values against AMAGO's own numbers are in ``test_against_amago_components.py``; here: the configs, the
conformance check, and what each option changes in a built agent.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

import numpy as np
import pytest
import torch
from gymnasium import spaces
from pydantic import ValidationError

from amago_agents.specs import AgentConfig, MultiTaskAgentConfig
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


def test_the_defaults_are_amagos() -> None:
    # AMAGO's Agent keeps one critic output per discrete action; its MultiTaskAgent always treats discrete
    # actions like continuous ones; NCriticsTwoHot starts from a random output layer.
    assert AgentConfig().discrete_like_continuous is False
    assert MultiTaskAgentConfig().discrete_like_continuous is True
    assert AgentConfig().gumbel_temperature == MultiTaskAgentConfig().gumbel_temperature == 0.5
    assert MultiTaskAgentConfig().critic_init_value is None


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("agent", {"discrete_like_continuous": True, "gumbel_temperature": 0.7}),
        ("multitask", {"min_return": -10.0, "max_return": 10.0, "output_bins": 64, "critic_init_value": 2.0}),
    ],
)
def test_check_component_with_the_options(name: str, config: dict) -> None:
    report = check_component("agents", name, config=config, context=CONTEXT)
    assert "builds through its factory" in report.passed
    assert report.built.critics.action_input  # one-hot actions are a critic input in both


def test_config_errors_name_the_key_in_one_line() -> None:
    cases = {
        "critic_init_value=150.0 is outside the bins' support [-100.0, 100.0]": {
            "min_return": -100.0,
            "max_return": 100.0,
            "critic_init_value": 150.0,
        },
        "critic_init_value=nan is outside": {
            "min_return": -1.0,
            "max_return": 1.0,
            "critic_init_value": "nan",
        },
        "discrete_like_continuous cannot be false": {"discrete_like_continuous": False},
    }
    for expected, options in cases.items():
        with pytest.raises(ValidationError, match=re.escape(expected)) as caught:
            MultiTaskAgentConfig.model_validate(options)
        message = caught.value.errors()[0]["msg"]
        assert "\n" not in message
        assert "multitask:" in message
    with pytest.raises(ValidationError, match="gumbel_temperature must be positive"):
        AgentConfig(gumbel_temperature=0.0)
    with pytest.raises(ValidationError, match="critic_init_value"):
        AgentConfig.model_validate({"critic_init_value": 1.0})  # a two-hot critic option only


def test_discrete_like_continuous_feeds_sampled_one_hots_to_the_critics(
    make_agent: Callable, make_batch: Callable
) -> None:
    plain = make_agent("agent", "discrete")
    agent = make_agent(
        "agent", "discrete", discrete_like_continuous=True, num_actions_for_value_in_actor_loss=3
    )
    assert not plain.critics.action_input
    assert agent.critics.action_input
    policy = agent.actor(torch.randn(2, 5, agent.state_dim))
    samples = agent.policy_actions(policy, 3, reparameterised=True)
    assert samples.shape == (3, 2, 5, len(agent.gammas), 4)
    assert torch.equal(samples.detach().sum(-1), torch.ones(3, 2, 5, len(agent.gammas)))
    assert samples.requires_grad  # straight-through: one-hot values, gradients of the relaxed sample
    # The policy gradient reaches the actor through the Gumbel samples; the critics only get the TD loss.
    loss, _ = agent.loss(make_batch("discrete"))
    loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in agent.actor.parameters())
    assert all(p.grad is None for p in agent.maximized_critics.parameters())


def test_critic_init_value_starts_every_critic_at_the_value(make_agent: Callable) -> None:
    agent = make_agent("multitask", "continuous", min_return=-100.0, max_return=100.0, output_bins=64)
    started = make_agent(
        "multitask", "continuous", min_return=-100.0, max_return=100.0, output_bins=64, critic_init_value=12.5
    )
    bias = started.critics.out.bias  # (C, 1, bins): every critic the same bump
    assert torch.equal(bias, bias[:1].expand_as(bias))
    assert abs(float(started.bins.logits_to_values(bias[0, 0].detach())) - 12.5) < 0.05
    # The targets and the copies start as the online critics, bump included.
    for copy in (started.target_critics, started.maximized_critics, started.previous_critics):
        assert torch.equal(copy.out.bias, bias)
    # Only the output bias changes: the rest of the initialisation draws the same numbers.
    for (name, ours), theirs in zip(
        started.critics.named_parameters(), agent.critics.parameters(), strict=True
    ):
        assert torch.equal(ours, theirs) != (name == "out.bias"), name
    with torch.no_grad():
        values = started.values(
            started.critics(torch.zeros(1, 2, started.state_dim), torch.zeros(1, 1, 2, 7, 2))
        )
    assert values.mean().item() == pytest.approx(12.5, rel=0.5)


def test_critic_init_value_near_an_edge_warns_once(make_agent: Callable) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_agent("multitask", "continuous", critic_init_value=45.0)  # bins over [-50, 50], 16 of them
    lines = [str(w.message) for w in caught if "critic_init_value" in str(w.message)]
    assert len(lines) == 1
    assert "bins from the edge" in lines[0]
    assert "\n" not in lines[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_agent("multitask", "continuous", critic_init_value=0.0, output_bins=64)


def test_the_heads_take_amagos_adaptive_activation() -> None:
    # AMAGO's actor and critic MLPs take activation="adaptive" (its rational function) too; the critic ensemble
    # shares one, as AMAGO's does.
    config = {"actor": {"activation": "adaptive"}, "critic": {"activation": "adaptive"}}
    report = check_component("agents", "agent", config=config, context=CONTEXT)
    assert "builds through its factory" in report.passed
    names = [name for name, _ in report.built.named_parameters()]
    assert any(name.startswith("actor.") and name.endswith("numerator") for name in names)
    assert any(name.startswith("critics.") and name.endswith("numerator") for name in names)
