"""Policy distributions: ranges, log-probs against torch's reference distributions, discrete clipping."""

from __future__ import annotations

import math

import pytest
import torch
from gymnasium import spaces

from amago_agents.distributions import (
    BetaDist,
    DiscreteDist,
    GMMDist,
    MultibinaryDist,
    TanhGaussianDist,
    action_dim_of,
    make_policy_distribution,
)
from amago_agents.specs import BetaDistConfig, DiscreteDistConfig, GMMDistConfig, TanhGaussianDistConfig


def test_discrete_probabilities_are_clipped_and_renormalised() -> None:
    dist = DiscreteDist(4, DiscreteDistConfig(clip_prob_low=0.01, clip_prob_high=0.9))
    policy = dist(torch.tensor([[50.0, 0.0, 0.0, -50.0]]))
    torch.testing.assert_close(policy.probs.sum(-1), torch.ones(1))
    raw = torch.tensor([[0.9, 0.01, 0.01, 0.01]])
    torch.testing.assert_close(policy.probs, raw / raw.sum())
    assert policy.log_probs.isfinite().all()


def test_discrete_log_prob_uses_the_marked_index_even_for_soft_one_hots() -> None:
    dist = DiscreteDist(3)
    policy = dist(torch.randn(5, 3))
    index = torch.tensor([0, 2, 1, 1, 0])
    hard = torch.nn.functional.one_hot(index, 3).float()
    expected = policy.probs.log().gather(-1, index[:, None])
    torch.testing.assert_close(policy.log_prob(hard), expected)
    torch.testing.assert_close(policy.log_prob(dist.soften_buffer_action(hard)), expected)


def test_discrete_samples_modes_and_gumbel() -> None:
    torch.manual_seed(0)
    policy = DiscreteDist(4)(torch.randn(2, 3, 4))
    samples = policy.sample()
    assert samples.shape == (2, 3, 1)
    assert samples.dtype == torch.long
    assert ((samples >= 0) & (samples < 4)).all()
    torch.testing.assert_close(policy.mode()[..., 0], policy.probs.argmax(-1))
    one_hot = policy.gumbel_rsample(0.5)
    torch.testing.assert_close(one_hot.sum(-1), torch.ones(2, 3))
    assert set(one_hot.unique().tolist()) <= {0.0, 1.0}


def test_tanh_gaussian_matches_torch_reference() -> None:
    torch.manual_seed(0)
    params = torch.randn(6, 4, requires_grad=True)
    policy = TanhGaussianDist(2, TanhGaussianDistConfig())(params)
    action = policy.rsample()
    assert action.abs().max() <= 1.0
    action.sum().backward()
    assert params.grad is not None
    assert params.grad.abs().sum() > 0, "rsample must be reparameterised"
    reference = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(policy.loc, policy.std), [torch.distributions.TanhTransform()]
    )
    probe = torch.rand(6, 2) * 1.8 - 0.9
    torch.testing.assert_close(
        policy.log_prob(probe), reference.log_prob(probe).sum(-1, keepdim=True), atol=1e-4, rtol=1e-4
    )
    torch.testing.assert_close(policy.mode(), torch.tanh(policy.loc))
    # std stays within its bounds however large the raw output
    extreme = TanhGaussianDist(1)(torch.tensor([[0.0, 1e4], [0.0, -1e4]]))
    assert extreme.std.max() <= math.exp(2) + 1e-4
    assert extreme.std.min() >= math.exp(-5) - 1e-6


def test_tanh_gaussian_log_prob_finite_at_the_bounds() -> None:
    policy = TanhGaussianDist(2)(torch.zeros(1, 4))
    assert policy.log_prob(torch.tensor([[1.0, -1.0]])).isfinite().all()


def test_gmm_single_mode_equals_tanh_gaussian() -> None:
    torch.manual_seed(0)
    gmm_dist = GMMDist(2, GMMDistConfig(modes=1))
    assert gmm_dist.input_dimension == 2 * 2 + 1
    assert not gmm_dist.actions_differentiable
    params = torch.randn(5, gmm_dist.input_dimension)
    gmm = gmm_dist(params)
    gaussian = TanhGaussianDist(2)(torch.zeros(5, 4))
    gaussian.loc, gaussian.std = gmm.loc[:, 0], gmm.std[:, 0]
    probe = torch.rand(5, 2) * 1.8 - 0.9
    torch.testing.assert_close(gmm.log_prob(probe), gaussian.log_prob(probe))
    samples = GMMDist(3)(torch.randn(4, 7, GMMDist(3).input_dimension)).sample()
    assert samples.shape == (4, 7, 3)
    assert samples.abs().max() <= 1.0


def test_gmm_mode_is_the_likeliest_component() -> None:
    dist = GMMDist(1, GMMDistConfig(modes=2))
    # means (0.5, -0.5), raw stds, logits favouring the second component
    policy = dist(torch.tensor([[0.5, -0.5, 0.0, 0.0, -3.0, 3.0]]))
    torch.testing.assert_close(policy.mode(), torch.tanh(torch.tensor([[-0.5]])))


def test_beta_range_log_prob_and_mode() -> None:
    torch.manual_seed(0)
    policy = BetaDist(3, BetaDistConfig())(torch.randn(8, 6))
    sample = policy.rsample()
    assert sample.min() >= -1.0
    assert sample.max() <= 1.0
    probe = torch.rand(8, 3) * 1.8 - 0.9
    reference = policy.dist.log_prob((probe + 1) / 2) - math.log(2.0)
    torch.testing.assert_close(policy.log_prob(probe), reference.sum(-1, keepdim=True))
    torch.testing.assert_close(policy.mode(), 2 * policy.dist.mean - 1)
    assert (policy.dist.concentration1 > 1.0).all()
    assert (policy.dist.concentration0 > 1.0).all()


def test_multibinary_log_prob_is_mean_over_dimensions() -> None:
    dist = MultibinaryDist(3)
    assert not dist.actions_differentiable
    assert not dist.is_discrete
    logits = torch.tensor([[2.0, -1.0, 0.5]])
    policy = dist(logits)
    action = torch.tensor([[1.0, 0.0, 0.0]])
    reference = torch.distributions.Bernoulli(logits=logits).log_prob(action).mean(-1, keepdim=True)
    torch.testing.assert_close(policy.log_prob(action), reference)
    torch.testing.assert_close(policy.mode(), torch.tensor([[1.0, 0.0, 1.0]]))
    assert set(policy.sample().unique().tolist()) <= {0.0, 1.0}


@pytest.mark.parametrize(
    ("space", "kind", "dim"),
    [
        (spaces.Discrete(6), DiscreteDist, 6),
        (spaces.MultiBinary(4), MultibinaryDist, 4),
        (spaces.Box(-1, 1, (3,)), TanhGaussianDist, 3),
    ],
)
def test_distribution_follows_the_action_space(space: spaces.Space, kind: type, dim: int) -> None:
    dist = make_policy_distribution(space, DiscreteDistConfig(), TanhGaussianDistConfig())
    assert isinstance(dist, kind)
    assert dist.action_dim == dim


def test_unsupported_action_space_is_named() -> None:
    with pytest.raises(ValueError, match="flatten the action space"):
        action_dim_of(spaces.Box(-1, 1, (2, 2)))
