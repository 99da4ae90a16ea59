"""Action masks in the agents: the policy never samples, picks or values a masked action, the timestep encoder
never sees the mask, and BC on data that respects it is unchanged."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces

from amago_agents.distributions import ClippedCategorical
from amago_core.data.batch import Batch
from amago_core.plugins import registries
from amago_core.rollout.action_mask import ACTION_MASK_KEY

torch.set_num_threads(1)
N_ACTIONS, OBS_DIM = 5, 3


def _agent(kind: str, masked: bool = True, **options: Any) -> torch.nn.Module:
    torch.manual_seed(0)
    obs = {"observation": spaces.Box(-1.0, 1.0, (OBS_DIM,))}
    if masked:
        obs[ACTION_MASK_KEY] = spaces.Box(0, 1, (N_ACTIONS,), bool)
    config: dict[str, Any] = {"kind": kind, "actor": {"d_hidden": 16}, "critic": {"d_hidden": 16}, **options}
    if kind == "multitask":
        config.update(min_return=-50.0, max_return=50.0, output_bins=16)
    return registries().agents.build(
        config,
        obs_space=spaces.Dict(obs),
        rl2_space=spaces.Box(-np.inf, np.inf, (1 + N_ACTIONS,)),
        action_space=spaces.Discrete(N_ACTIONS),
        max_seq_len=8,
        tstep_encoder=registries().tstep_encoders.builder(
            {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 8}
        ),
        traj_encoder=registries().traj_encoders.builder(
            {"kind": "rnn", "d_hidden": 8, "d_output": 8, "n_layers": 1}
        ),
    )


def _masks(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Random masks with at least one allowed action per row, and never action 0 (the top logit below)."""
    gen = torch.Generator().manual_seed(seed)
    allowed = torch.rand(*shape, N_ACTIONS, generator=gen) < 0.5
    allowed[..., 0] = False
    allowed[..., 1 + torch.randint(N_ACTIONS - 1, shape, generator=gen)] = True
    return allowed


def test_a_clipped_policy_gives_masked_actions_probability_zero():
    logits = torch.tensor([[8.0, 0.0, -3.0, 1.0, 0.5]])  # action 0 would pass clip_high on its own
    allowed = torch.tensor([[False, True, True, False, True]])
    policy = ClippedCategorical(logits, 0.001, 0.99, allowed)
    assert policy.probs[0, [0, 3]].tolist() == [0.0, 0.0]  # the clip's floor does not bring them back
    torch.testing.assert_close(policy.probs.sum(-1), torch.ones(1))
    assert set(policy.sample().flatten().tolist()) <= {1, 2, 4}
    unmasked = ClippedCategorical(logits, 0.001, 0.99)
    torch.testing.assert_close(
        ClippedCategorical(logits, 0.001, 0.99, torch.ones_like(allowed)).probs, unmasked.probs
    )


def test_sampling_never_picks_a_masked_action_even_below_eps():
    # clip_prob_low = 0: an allowed action's probability may be far below float eps, where log(eps) of a masked
    # one would otherwise win some Gumbel draws.
    logits = torch.tensor([[0.0, -120.0, -130.0]]).expand(20000, 3)
    allowed = torch.tensor([False, True, True]).expand(20000, 3)
    policy = ClippedCategorical(logits, 0.0, 1.0, allowed)
    assert 0 not in policy.sample().unique().tolist()
    assert 0 not in policy.gumbel_rsample(0.5).argmax(-1).unique().tolist()


@pytest.mark.parametrize(
    ("kind", "options"), [("agent", {}), ("agent", {"discrete_like_continuous": True}), ("multitask", {})]
)
def test_the_agent_acts_only_on_allowed_actions_and_its_encoder_never_sees_the_mask(kind, options):
    agent = _agent(kind, **options)
    assert ACTION_MASK_KEY not in agent.tstep_encoder.obs_space.spaces
    n = 400
    allowed = _masks((n, 1), seed=1)
    obs = {"observation": torch.randn(n, 1, OBS_DIM), ACTION_MASK_KEY: allowed}
    rl2 = torch.zeros(n, 1, 1 + N_ACTIONS)
    time = torch.zeros(n, 1, 1, dtype=torch.long)
    for sample in (True, False):
        actions, _ = agent.get_actions(obs, rl2, time, agent.init_hidden_state(n, "cpu"), sample=sample)
        picked = allowed[torch.arange(n), 0, actions[:, 0, 0]]
        assert bool(picked.all()), f"sample={sample}: a masked action was chosen"
    # The encoder is built without the mask and ignores its value (eval: input normalisation stops moving).
    agent.eval()
    other = dict(obs, **{ACTION_MASK_KEY: ~allowed | _masks((n, 1), seed=2)})
    a, _ = agent.get_state_embedding(obs, rl2, time, agent.init_hidden_state(n, "cpu"))
    b, _ = agent.get_state_embedding(other, rl2, time, agent.init_hidden_state(n, "cpu"))
    torch.testing.assert_close(a, b)


def _batch(allowed: torch.Tensor, seed: int = 0) -> Batch:
    batch_size, length = allowed.shape[:2]
    gen = torch.Generator().manual_seed(seed)
    # Buffer actions that respect the mask: the first allowed action after a random offset.
    scores = torch.rand(batch_size, length - 1, N_ACTIONS, generator=gen) * allowed[:, :-1]
    actions = torch.nn.functional.one_hot(scores.argmax(-1), N_ACTIONS).float()
    mask = torch.ones(batch_size, length, dtype=torch.bool)
    mask[0, 4:] = False  # a padded row: its masks are all False, as collate writes them
    allowed = allowed.clone()
    allowed[~mask] = False
    actions[~mask[:, 1:]] = 0.0
    rews = torch.randn(batch_size, length - 1, 1, generator=gen)
    rl2s = torch.cat((torch.zeros(batch_size, 1, 1 + N_ACTIONS), torch.cat((rews, actions), -1)), 1)
    return Batch(
        obs={
            "observation": torch.randn(batch_size, length, OBS_DIM, generator=gen),
            ACTION_MASK_KEY: allowed,
        },
        rl2s=rl2s,
        time_idxs=torch.arange(length).expand(batch_size, length)[..., None].clone(),
        rews=rews,
        dones=torch.zeros(batch_size, length - 1, 1, dtype=torch.bool),
        actions=actions,
        mask=mask,
    )


@pytest.mark.parametrize(
    ("kind", "options"), [("agent", {}), ("agent", {"discrete_like_continuous": True}), ("multitask", {})]
)
def test_the_loss_with_masks_and_padding_is_finite(kind, options):
    agent = _agent(kind, **options)
    batch = _batch(_masks((3, 7), seed=3))
    loss, _ = agent.loss(batch, log_step=True)
    assert torch.isfinite(loss)
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in agent.parameters() if p.grad is not None)


def test_an_all_allowed_mask_changes_nothing():
    # BC and the value on data that respects a mask allowing every action: the unmasked agent's loss exactly.
    masked, plain = _agent("agent"), _agent("agent", masked=False)
    plain.load_state_dict(masked.state_dict())
    batch = _batch(torch.ones(3, 7, N_ACTIONS, dtype=torch.bool))
    batch.obs[ACTION_MASK_KEY][0, 4:] = True  # padding too, as it would be for an env that allows everything
    unmasked_batch = dataclasses.replace(batch, obs={"observation": batch.obs["observation"]})
    torch.manual_seed(5)
    with_mask, _ = masked.loss(batch)
    torch.manual_seed(5)
    without, _ = plain.loss(unmasked_batch)
    torch.testing.assert_close(with_mask, without)


def test_masks_of_other_action_spaces_are_refused_in_one_line():
    with pytest.raises(ValueError, match="masks Discrete and MultiDiscrete actions"):
        registries().agents.build(
            {"kind": "agent"},
            obs_space=spaces.Dict(
                {"observation": spaces.Box(-1, 1, (2,)), ACTION_MASK_KEY: spaces.Box(0, 1, (2,), bool)}
            ),
            rl2_space=spaces.Box(-np.inf, np.inf, (3,)),
            action_space=spaces.Box(-1, 1, (2,)),
            max_seq_len=4,
            tstep_encoder=registries().tstep_encoders.builder("ff"),
            traj_encoder=registries().traj_encoders.builder("ff"),
        )
