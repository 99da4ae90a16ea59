"""MultiDiscrete actions: a factored policy (one clipped categorical per dimension), critics that take the
dimensions' one-hots as input, masks per dimension, and exploration that draws every dimension."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from amago_agents.distributions import FactoredCategorical, MultiDiscreteDist
from amago_core.data.batch import Batch
from amago_core.plugins import registries
from amago_core.rollout.action_mask import ACTION_MASK_KEY
from amago_core.rollout.env import AMAGOEnv
from amago_core.rollout.sequence import SequenceEnv
from amago_envs.exploration.specs import EGreedyConfig
from amago_envs.exploration.wrappers import EpsilonGreedy

SIZES = [3, 2, 4]
WIDTH = sum(SIZES)


def _agent(kind: str, masked: bool = False) -> torch.nn.Module:
    torch.manual_seed(0)
    obs = {"observation": spaces.Box(-1.0, 1.0, (3,))}
    if masked:
        obs[ACTION_MASK_KEY] = spaces.Box(0, 1, (WIDTH,), bool)
    config = {"kind": kind, "actor": {"d_hidden": 16}, "critic": {"d_hidden": 16}}
    if kind == "multitask":
        config.update(min_return=-50.0, max_return=50.0, output_bins=16)
    return registries().agents.build(
        config,
        obs_space=spaces.Dict(obs),
        rl2_space=spaces.Box(-np.inf, np.inf, (1 + WIDTH,)),
        action_space=spaces.MultiDiscrete(SIZES),
        max_seq_len=8,
        tstep_encoder=registries().tstep_encoders.builder(
            {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 8}
        ),
        traj_encoder=registries().traj_encoders.builder(
            {"kind": "rnn", "d_hidden": 8, "d_output": 8, "n_layers": 1}
        ),
    )


def test_the_factored_policy_is_a_product_of_the_dimensions():
    logits = torch.randn(5, WIDTH)
    policy = MultiDiscreteDist(SIZES)(logits)
    assert isinstance(policy, FactoredCategorical)
    action = torch.tensor([2, 0, 3])
    one_hot = torch.cat(
        [torch.nn.functional.one_hot(a, k) for a, k in zip(action, SIZES, strict=True)]
    ).float()
    expected = sum(dim.log_probs[:, int(a)] for dim, a in zip(policy.dims, action, strict=True))
    torch.testing.assert_close(policy.log_prob(one_hot.expand(5, WIDTH))[:, 0], expected)
    samples = policy.sample()
    assert samples.shape == (5, 3)
    assert (samples < torch.tensor(SIZES)).all()
    assert policy.sample_one_hot().sum(-1).eq(3).all()  # one choice per dimension
    torch.testing.assert_close(
        policy.entropy_estimate()[:, 0], sum(d.entropy_estimate()[:, 0] for d in policy.dims)
    )


@pytest.mark.parametrize("kind", ["agent", "multitask"])
def test_agents_act_and_learn_with_multidiscrete_actions(kind):
    agent = _agent(kind)
    assert agent.critics.action_input  # the critics take the dimensions' one-hots, as for continuous actions
    n = 64
    obs = {"observation": torch.randn(n, 1, 3)}
    actions, _ = agent.get_actions(obs, torch.zeros(n, 1, 1 + WIDTH), torch.zeros(n, 1, 1, dtype=torch.long))
    assert actions.shape == (n, 1, 3)
    assert actions.dtype == torch.long
    assert (actions[:, 0] < torch.tensor(SIZES)).all()
    gen = torch.Generator().manual_seed(0)
    batch_size, length = 3, 6
    choice = torch.stack([torch.randint(k, (batch_size, length - 1), generator=gen) for k in SIZES], -1)
    one_hot = torch.cat(
        [torch.nn.functional.one_hot(choice[..., d], k) for d, k in enumerate(SIZES)], -1
    ).float()
    rews = torch.randn(batch_size, length - 1, 1, generator=gen)
    batch = Batch(
        obs={"observation": torch.randn(batch_size, length, 3, generator=gen)},
        rl2s=torch.cat((torch.zeros(batch_size, 1, 1 + WIDTH), torch.cat((rews, one_hot), -1)), 1),
        time_idxs=torch.arange(length).expand(batch_size, length)[..., None].clone(),
        rews=rews,
        dones=torch.zeros(batch_size, length - 1, 1, dtype=torch.bool),
        actions=one_hot,
        mask=torch.ones(batch_size, length, dtype=torch.bool),
    )
    loss, _ = agent.loss(batch, log_step=True)
    assert torch.isfinite(loss)
    loss.backward()
    assert agent.actor.net.net[0].weight.grad.abs().sum() > 0  # the policy gradient reaches the actor


def test_masks_apply_per_dimension():
    agent = _agent("agent", masked=True).eval()
    n = 300
    allowed = torch.ones(n, 1, WIDTH, dtype=torch.bool)
    allowed[..., 0:2] = False  # dimension 0: only choice 2
    allowed[..., 5:8] = False  # dimension 2: only choice 3
    obs = {"observation": torch.randn(n, 1, 3), ACTION_MASK_KEY: allowed}
    for sample in (True, False):
        actions, _ = agent.get_actions(
            obs, torch.zeros(n, 1, 1 + WIDTH), torch.zeros(n, 1, 1, dtype=torch.long), sample=sample
        )
        assert actions[:, 0, 0].eq(2).all()
        assert actions[:, 0, 2].eq(3).all()


def test_exploration_draws_every_dimension_within_the_mask():
    import gymnasium as gym

    class Lock(gym.Env):
        observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
        action_space = gym.spaces.MultiDiscrete(SIZES)

        def reset(self, seed=None, options=None):
            return np.zeros(1, np.float32), {"legal": self.legal()}

        def legal(self):
            mask = np.ones(WIDTH, bool)
            mask[3] = False  # dimension 1 may not choose 0
            return mask

        def step(self, action):
            self.last = np.asarray(action)
            return np.zeros(1, np.float32), 0.0, False, False, {"legal": self.legal()}

    inner = Lock()
    env = AMAGOEnv(inner, env_name="lock", action_mask_key="legal", action_mask_from="info")
    seq = SequenceEnv(
        EpsilonGreedy(env, EGreedyConfig(eps_start=1.0, eps_end=1.0, randomize_eps=False), seed=0)
    )
    seq.reset()
    seen = []
    for _ in range(300):
        seq.step(np.array([[0, 1, 0]]))
        seen.append(inner.last.copy())
    seen = np.array(seen)
    assert set(seen[:, 1]) == {1}  # masked choice 0 never drawn
    assert set(seen[:, 0]) == {0, 1, 2}
    assert set(seen[:, 2]) == {0, 1, 2, 3}
