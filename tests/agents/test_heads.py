"""Heads: the batched critic ensemble equals independent critics; discrete critics take exact expectations."""

from __future__ import annotations

import torch

from amago_agents.distributions import (
    BetaDist,
    DiscreteDist,
    GMMDist,
    MultibinaryDist,
    MultiDiscreteDist,
    TanhGaussianDist,
)
from amago_agents.heads import ActorHead, CriticEnsemble, EnsembleLinear, gamma_features
from amago_agents.specs import ActorHeadConfig, CriticHeadConfig

GAMMAS = (0.9, 0.99, 0.999)


def member_forward(critics: CriticEnsemble, member: int, x: torch.Tensor) -> torch.Tensor:
    """Critic ``member`` as a plain MLP over its concatenated input, one member at a time."""
    weight = critics.inp_state.weight[member]
    bias = critics.inp_state.bias[member, 0]
    if critics.inp_extra is not None:
        weight = torch.cat((weight, critics.inp_extra.weight[member]), 0)
    h = torch.nn.functional.leaky_relu(x @ weight + bias)
    for layer in critics.hidden:
        h = torch.nn.functional.leaky_relu(h @ layer.weight[member] + layer.bias[member, 0])
    return h @ critics.out.weight[member] + critics.out.bias[member, 0]


def test_ensemble_linear_matches_members() -> None:
    torch.manual_seed(0)
    layer = EnsembleLinear(3, 5, 4)
    x = torch.randn(7, 5)
    shared = layer.forward_shared(x)
    stacked = layer(x.expand(3, 7, 5).contiguous())
    for c in range(3):
        expected = x @ layer.weight[c] + layer.bias[c]
        torch.testing.assert_close(shared[c], expected)
        torch.testing.assert_close(stacked[c], expected)


def test_critic_init_choices_draw_their_documented_bounds() -> None:
    """``amago``: AMAGO's EinMix bounds over the whole [state, gamma, action] layer; ``linear``: nn.Linear's per
    part. The largest draw of many sits just under its bound (uniform draws), so a wrong bound fails."""
    torch.manual_seed(0)
    state_dim, action_dim, d = 60, 3, 256
    fan_in = state_dim + 1 + action_dim
    expected = {
        "amago": {
            "inp_state": (3 / fan_in) ** 0.5,
            "inp_extra": (3 / fan_in) ** 0.5,
            "hidden": (3 / d) ** 0.5,
        },
        "linear": {"inp_state": state_dim**-0.5, "inp_extra": (1 + action_dim) ** -0.5, "hidden": d**-0.5},
    }
    for init, bounds in expected.items():
        config = CriticHeadConfig(d_hidden=d, n_layers=2, init=init)
        critics = CriticEnsemble(state_dim, action_dim, GAMMAS, 4, config, action_input=True)
        layers = {"inp_state": critics.inp_state, "inp_extra": critics.inp_extra, "hidden": critics.hidden[0]}
        for name, bound in bounds.items():
            largest = layers[name].weight.abs().max().item()
            assert 0.98 * bound < largest <= bound, (
                f"{init} {name}: largest |w| {largest:.4f}, bound {bound:.4f}"
            )


def test_continuous_critics_fold_gammas_and_samples() -> None:
    torch.manual_seed(0)
    critics = CriticEnsemble(6, 2, GAMMAS, 4, CriticHeadConfig(d_hidden=8, n_layers=2), action_input=True)
    state = torch.randn(2, 3, 6)
    actions = torch.rand(5, 2, 3, len(GAMMAS), 2) * 2 - 1
    out = critics(state, actions)
    assert out.shape == (5, 2, 3, 4, len(GAMMAS), 1)
    features = gamma_features(torch.tensor(GAMMAS))
    for k, b, t, c, g in [(0, 0, 0, 0, 0), (4, 1, 2, 3, 2), (2, 0, 1, 1, 1)]:
        x = torch.cat((state[b, t], features[g : g + 1], actions[k, b, t, g].clamp(-0.999, 0.999)))
        torch.testing.assert_close(out[k, b, t, c, g], member_forward(critics, c, x), atol=1e-5, rtol=1e-5)


def _backward_nodes(output: torch.Tensor) -> set[str]:
    """The names of every node in ``output``'s autograd graph."""
    seen, names, stack = set(), set(), [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.add(type(node).__name__)
        stack.extend(parent for parent, _ in node.next_functions)
    return names


def test_critics_with_action_inputs_never_activate_in_place_through_a_view() -> None:
    """An in-place activation on a reshape view makes autograd rebuild the view's whole base in backward
    (``CopySlices``): 12 % of a continuous-action update on a CPU. The activations stay in place (no extra copy)."""
    critics = CriticEnsemble(6, 2, GAMMAS, 4, CriticHeadConfig(d_hidden=8, n_layers=2), action_input=True)
    state = torch.randn(3, 5, 6, requires_grad=True)
    values = critics(state, torch.rand(2, 3, 5, len(GAMMAS), 2) * 2 - 1)
    nodes = _backward_nodes(values)
    assert "CopySlices" not in nodes
    assert "LeakyReluBackward1" in nodes  # the in-place form (LeakyReluBackward0 is the out-of-place one)


def test_discrete_critics_take_exact_expectations() -> None:
    torch.manual_seed(0)
    critics = CriticEnsemble(6, 4, GAMMAS, 2, CriticHeadConfig(d_hidden=8), action_input=False)
    state = torch.randn(2, 3, 6)
    probs = torch.softmax(torch.randn(1, 2, 3, len(GAMMAS), 4), -1)
    out = critics(state, probs)
    assert out.shape == (1, 2, 3, 2, len(GAMMAS), 1)
    per_action = torch.stack(
        [
            critics(state, torch.nn.functional.one_hot(torch.full((1, 2, 3, len(GAMMAS)), a), 4).float())
            for a in range(4)
        ],
        -1,
    )[..., 0, :]  # (1, B, T, C, G, A)
    expected = (per_action * probs.unsqueeze(3)).sum(-1, keepdim=True)
    torch.testing.assert_close(out, expected)
    values = member_forward(critics, 1, state[0, 0]).reshape(len(GAMMAS), 4)
    torch.testing.assert_close(out[0, 0, 0, 1, :, 0], (values * probs[0, 0, 0]).sum(-1), atol=1e-5, rtol=1e-5)


def test_two_hot_critics_output_bins() -> None:
    critics = CriticEnsemble(6, 3, GAMMAS, 2, CriticHeadConfig(d_hidden=8), action_input=True, out_dim=11)
    out = critics(torch.randn(2, 4, 6), torch.rand(3, 2, 4, len(GAMMAS), 3))
    assert out.shape == (3, 2, 4, 2, len(GAMMAS), 11)


def test_actor_heads_give_one_policy_per_gamma() -> None:
    for config in (
        ActorHeadConfig(d_hidden=8),
        ActorHeadConfig(type="residual", feature_dim=8, residual_ff_dim=16),
    ):
        discrete = ActorHead(6, len(GAMMAS), DiscreteDist(4), config)(torch.randn(2, 5, 6))
        assert discrete.probs.shape == (2, 5, len(GAMMAS), 4)
        continuous = ActorHead(6, len(GAMMAS), TanhGaussianDist(2), config)(torch.randn(2, 5, 6))
        assert continuous.rsample().shape == (2, 5, len(GAMMAS), 2)


def test_acting_policy_is_the_last_gammas_policy_of_the_full_head() -> None:
    """Rollouts build only the acting (last) gamma's policy: its parameters, modes and log-probabilities must be
    exactly those of the full head's last gamma, for every distribution, masked or not."""
    torch.manual_seed(0)
    state = torch.randn(16, 1, 6)
    cases = [
        (DiscreteDist(4), torch.nn.functional.one_hot(torch.randint(0, 4, (16, 1, 1)), 4).float()),
        (
            MultiDiscreteDist([3, 2]),
            torch.cat([torch.eye(3)[[0]], torch.eye(2)[[1]]], -1).expand(16, 1, 1, 5),
        ),
        (TanhGaussianDist(2), torch.rand(16, 1, 1, 2) * 1.8 - 0.9),
        (GMMDist(2), torch.rand(16, 1, 1, 2) * 1.8 - 0.9),
        (BetaDist(2), torch.rand(16, 1, 1, 2) * 1.8 - 0.9),
        (MultibinaryDist(3), torch.randint(0, 2, (16, 1, 1, 3)).float()),
    ]
    for dist, action in cases:
        for config in (ActorHeadConfig(d_hidden=8), ActorHeadConfig(type="residual", feature_dim=8)):
            head = ActorHead(6, len(GAMMAS), dist, config)
            full, acting = head(state), head.acting_policy(state)
            assert torch.equal(acting.mode(), full.mode()[..., -1:, :]), type(dist).__name__
            assert torch.equal(
                acting.log_prob(action), full.log_prob(action.expand(16, 1, len(GAMMAS), -1))[..., -1:, :]
            ), type(dist).__name__
    allowed = torch.zeros(16, 1, 1, 4, dtype=torch.bool)
    allowed[..., 1:3] = True
    head = ActorHead(6, len(GAMMAS), DiscreteDist(4), ActorHeadConfig(d_hidden=8))
    full, acting = head(state, allowed=allowed), head.acting_policy(state, allowed=allowed)
    assert torch.equal(acting.probs, full.probs[..., -1:, :])
    assert set(acting.sample().flatten().tolist()) <= {1, 2}
