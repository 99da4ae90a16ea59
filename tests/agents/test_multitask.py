"""MultiTaskAgent specifics: classification critic targets and the discrete behaviour-cloning term."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch

from amago_agents.twohot import symexp


def test_discrete_bc_uses_the_log_prob_of_the_buffer_index(
    make_agent: Callable, make_batch: Callable
) -> None:
    # fake_filter + no policy gradient: the loss is exactly -mean log pi(a_buffer) (critics untrained).
    agent = make_agent("multitask", "discrete", fake_filter=True, online_coeff=0.0, offline_coeff=1.0)
    batch = make_batch("discrete")
    # Soften the stored one-hots as AMAGO's action_from_buffer would: the index they mark must still be used.
    batch.actions = batch.actions.clamp(0.001, 0.99)
    batch.actions = batch.actions / batch.actions.sum(-1, keepdim=True)
    replica = copy.deepcopy(agent)  # replays the loss's one update of the input statistics
    loss, metrics = agent.loss(batch)
    assert metrics["Critic Loss"] == 0.0
    states, _ = replica.get_state_embedding(batch.obs, batch.rl2s, batch.time_idxs, pad_mask=~batch.mask)
    probs = replica.actor(states[:, :-1]).probs  # (B, T, G, A)
    index = batch.actions.argmax(-1)[..., None, None].expand(-1, -1, probs.shape[2], 1)
    log_prob = probs.log().gather(-1, index)
    valid = batch.mask[:, 1:]
    torch.testing.assert_close(loss, -log_prob[valid].mean(), rtol=1e-5, atol=1e-5)


def test_critic_loss_is_cross_entropy_to_two_hot_targets(make_agent: Callable, make_batch: Callable) -> None:
    # One critic and one gamma, no actor terms: the loss can be rebuilt by hand from the networks.
    agent = make_agent(
        "multitask",
        "continuous",
        num_critics=1,
        num_critics_td=1,
        use_multigamma=False,
        critic_loss_weight=1.0,
        offline_coeff=0.0,
        gamma=0.9,
        reward_multiplier=2.0,
    )
    batch = make_batch("continuous")
    replica = copy.deepcopy(agent)  # replays the loss's one update of the input statistics
    torch.manual_seed(3)
    loss, _ = agent.loss(batch)

    torch.manual_seed(3)  # the same random draws, in the same order: the target actor's sample first
    with torch.no_grad():
        states, _ = replica.get_state_embedding(batch.obs, batch.rl2s, batch.time_idxs, pad_mask=~batch.mask)
        now, after = states[:, :-1], states[:, 1:]
        logits = agent.critics(now, batch.actions[None, :, :, None, :])[0, :, :, 0, 0]  # (B, T, bins)
        next_action = agent.target_actor(after).sample()  # (B, T, 1, A)
        next_logits = agent.target_critics(after, next_action[None])[0, :, :, 0, 0]
        next_value = symexp((next_logits.softmax(-1) * agent.bins.centres).sum(-1))
        not_done = 1.0 - batch.dones[..., 0].float()
        target = 2.0 * batch.rews[..., 0] + 0.9 * not_done * next_value
        labels = agent.bins.to_labels(target)
        cross_entropy = -(labels * logits.log_softmax(-1)).sum(-1)
    valid = batch.mask[:, 1:]
    torch.testing.assert_close(loss.detach(), cross_entropy[valid].mean(), rtol=1e-5, atol=1e-5)


def test_unset_return_range_warns(make_agent: Callable) -> None:
    with pytest.warns(UserWarning, match="min_return/max_return unset"):
        make_agent("multitask", "discrete", min_return=None, max_return=None)
