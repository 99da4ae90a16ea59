"""Heads run on real timesteps only: losses and gradients equal the padded computation's on a fixed batch."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch

from amago_nets.real_steps import RealSteps


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


def test_windows_with_padding_before_real_steps_are_not_gathered() -> None:
    pad_mask = torch.tensor([[False, True, False], [False, False, False]])
    assert RealSteps.of_window(pad_mask) is None  # a real step after padding: gathering would not be exact
    assert RealSteps.of_window(torch.zeros(2, 3, dtype=torch.bool)) is None  # nothing to skip
    suffix = RealSteps.of_window(torch.tensor([[False, False, True], [False, False, False]]))
    assert suffix is not None
    assert suffix.count == 5


def loss_and_grads(agent: torch.nn.Module, batch, seed: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    agent.zero_grad(set_to_none=True)
    torch.manual_seed(seed)  # the same policy samples and ensemble subsets on both paths
    loss, _ = agent.loss(batch, log_step=True)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in agent.named_parameters() if p.grad is not None}
    return loss.detach(), grads


# No dropout: the two paths draw different dropout masks (the same distribution, not the same numbers).
TRANSFORMER = {
    "kind": "transformer",
    "d_model": 8,
    "n_heads": 2,
    "d_ff": 16,
    "n_layers": 2,
    "pos_emb": "rope",
    "dropout_ff": 0.0,
    "dropout_emb": 0.0,
}
FF = {"kind": "ff", "d_model": 8, "n_layers": 2}


@pytest.mark.parametrize(
    ("kind", "space", "options"),
    [
        ("agent", "discrete", {}),
        ("agent", "continuous", {"num_actions_for_value_in_critic_loss": 2}),
        ("agent", "discrete", {"n_step": 3, "fbc_filter": {"type": "exp"}}),
        ("multitask", "discrete", {"online_coeff": 0.5}),
        ("multitask", "continuous", {}),
        ("agent", "discrete", {"traj_encoder": TRANSFORMER}),
        ("agent", "continuous", {"traj_encoder": {**TRANSFORMER, "pos_emb": "learnable"}}),
        ("multitask", "discrete", {"traj_encoder": FF}),
    ],
)
def test_real_steps_match_the_padded_computation(
    kind: str, space: str, options: dict, make_agent: Callable, make_batch: Callable, monkeypatch
) -> None:
    """Heads and the encoders that take a pad_mask (ff, transformer) skip padding; nothing else changes."""
    agent = make_agent(kind, space, **options)
    batch = make_batch(space, batch_size=4, length=7)
    batch.mask[2, 3:] = False  # two padded rows
    assert not batch.mask.all()
    # A twin from before the update: the loss moves PopArt's and the input norm's statistics.
    twin = copy.deepcopy(agent)
    loss, grads = loss_and_grads(agent, batch, seed=5)
    monkeypatch.setattr(RealSteps, "padded", property(lambda self: False))  # everything on every timestep
    padded_loss, padded_grads = loss_and_grads(twin, batch, seed=5)
    torch.testing.assert_close(loss, padded_loss, rtol=1e-6, atol=1e-7)
    assert grads.keys() == padded_grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, padded_grads[name], rtol=1e-5, atol=1e-5, msg=name)
