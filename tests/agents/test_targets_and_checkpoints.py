"""Target networks, the one-update-stale critic copy, trainable parameters and exact checkpoint round trips."""

from __future__ import annotations

import copy
import io
from collections.abc import Callable

import pytest
import torch

TINY_TRANSFORMER = {
    "kind": "transformer",
    "d_model": 8,
    "n_heads": 2,
    "d_ff": 16,
    "n_layers": 1,
    "sigma_reparam": True,
}


def params_of(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def fake_optimizer_step(module: torch.nn.Module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=gen))


def test_polyak_targets_and_stale_maximized_critics(make_agent: Callable) -> None:
    agent = make_agent("agent", "continuous", tau=0.25)
    theta0 = params_of(agent.critics)
    target0, actor_target0 = params_of(agent.target_critics), params_of(agent.target_actor)
    fake_optimizer_step(agent.critics, 1)
    fake_optimizer_step(agent.actor, 2)
    theta1, actor1 = params_of(agent.critics), params_of(agent.actor)
    agent.soft_sync_targets()  # after step 1
    for got, old, new in zip(agent.target_critics.parameters(), target0, theta1, strict=True):
        torch.testing.assert_close(got, 0.75 * old + 0.25 * new)
    for got, old, new in zip(agent.target_actor.parameters(), actor_target0, actor1, strict=True):
        torch.testing.assert_close(got, 0.75 * old + 0.25 * new)
    for got, stale in zip(agent.maximized_critics.parameters(), theta0, strict=True):
        torch.testing.assert_close(got, stale)  # one update behind the online critics
    fake_optimizer_step(agent.critics, 3)
    agent.soft_sync_targets()  # after step 2
    for got, stale in zip(agent.maximized_critics.parameters(), theta1, strict=True):
        torch.testing.assert_close(got, stale)


def test_trainable_parameters_exclude_targets_and_copies(make_agent: Callable) -> None:
    agent = make_agent("agent", "discrete")
    trainable = {id(p) for p in agent.trainable_parameters()}
    expected = {
        id(p)
        for part in (agent.tstep_encoder, agent.traj_encoder, agent.critics, agent.actor)
        for p in part.parameters()
    }
    assert trainable == expected
    for frozen in (agent.target_critics, agent.maximized_critics, agent.previous_critics, agent.target_actor):
        assert not any(id(p) in trainable for p in frozen.parameters())
        assert not any(p.requires_grad for p in frozen.parameters())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["agent", "multitask"])
def test_state_dict_round_trip_is_exact(kind: str, make_agent: Callable, make_batch: Callable) -> None:
    agent = make_agent(kind, "discrete", traj_encoder=TINY_TRANSFORMER)
    optimizer = torch.optim.AdamW(agent.trainable_parameters(), lr=1e-2)
    batch = make_batch("discrete")
    for _ in range(3):  # move PopArt, input statistics, σReparam vectors, targets and copies off their init
        optimizer.zero_grad()
        agent.loss(batch)[0].backward()
        optimizer.step()
        agent.soft_sync_targets()
    state = agent.state_dict()
    for needed in (
        "popart.mu",
        "popart.nu",
        "popart.w",
        "popart.b",
        "tstep_encoder.input_norm.mu",
        "target_critics.out.weight",
        "maximized_critics.out.weight",
        "target_actor.net.net.0.weight",
    ):
        assert needed in state, f"{needed} missing from the checkpoint"
    for sigma_reparam_vector in ("traj_encoder.layers.0.attention.qkv.u", "traj_encoder.layers.0.ff1.v"):
        assert sigma_reparam_vector in state, "σReparam power-iteration vectors belong in the checkpoint"
    assert not torch.equal(state["popart.mu"], torch.zeros_like(state["popart.mu"]))
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    torch.manual_seed(123)  # a differently initialised agent
    restored = make_agent(kind, "discrete", traj_encoder=TINY_TRANSFORMER)
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    for key, value in agent.state_dict().items():
        assert torch.equal(restored.state_dict()[key], value), key
    losses = []
    for model in (agent, restored):
        torch.manual_seed(7)
        losses.append(copy.deepcopy(model).loss(batch)[0])
    assert torch.equal(losses[0], losses[1])
