"""Heads run on real timesteps only: losses and gradients equal the padded computation's on a fixed batch."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from amago_agents.real_steps import RealSteps


def test_take_and_put_are_inverse_on_real_steps() -> None:
    valid = torch.tensor([[True, True, False], [True, True, True]])
    real = RealSteps(valid)
    x = torch.arange(2 * 2 * 3 * 4, dtype=torch.float32).reshape(2, 2, 3, 4)  # (K, B, T, F)
    taken = real.take(x, dim=1)
    assert taken.shape == (2, 1, 5, 4)
    back = real.put(taken, dim=1)
    assert torch.equal(back[:, valid], x[:, valid])
    assert torch.equal(back[:, ~valid], torch.zeros(2, 1, 4))
    assert real.padded
    assert not RealSteps(torch.ones(2, 3, dtype=torch.bool)).padded


def loss_and_grads(agent: torch.nn.Module, batch, seed: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    agent.zero_grad(set_to_none=True)
    torch.manual_seed(seed)  # the same policy samples and ensemble subsets on both paths
    loss, _ = agent.loss(batch, log_step=True)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in agent.named_parameters() if p.grad is not None}
    return loss.detach(), grads


@pytest.mark.parametrize(
    ("kind", "space", "options"),
    [
        ("agent", "discrete", {}),
        ("agent", "continuous", {"num_actions_for_value_in_critic_loss": 2}),
        ("agent", "discrete", {"n_step": 3, "fbc_filter": {"type": "exp"}}),
        ("multitask", "discrete", {"online_coeff": 0.5}),
        ("multitask", "continuous", {}),
    ],
)
def test_heads_on_real_steps_match_the_padded_computation(
    kind: str, space: str, options: dict, make_agent: Callable, make_batch: Callable, monkeypatch
) -> None:
    agent = make_agent(kind, space, **options)
    batch = make_batch(space, batch_size=4, length=7)
    batch.mask[2, 3:] = False  # two padded rows
    assert not batch.mask.all()
    loss, grads = loss_and_grads(agent, batch, seed=5)
    monkeypatch.setattr(RealSteps, "padded", property(lambda self: False))  # every head on every timestep
    padded_loss, padded_grads = loss_and_grads(agent, batch, seed=5)
    torch.testing.assert_close(loss, padded_loss, rtol=1e-6, atol=1e-7)
    assert grads.keys() == padded_grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, padded_grads[name], rtol=1e-5, atol=1e-5, msg=name)
