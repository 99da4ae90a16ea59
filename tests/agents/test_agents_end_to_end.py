"""Both agents on every action space: loss, backward, gradients, rollout actions, masks, loss-term hooks."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
from gymnasium import spaces

from amago_agents.agent import Agent
from amago_agents.base import NonFiniteLossError
from amago_agents.returns import reduce_ensemble
from amago_core.plugins import registries

KINDS = ("agent", "multitask")
SPACES = ("discrete", "continuous", "multibinary")


def grad_norm(module: torch.nn.Module) -> float:
    grads = [p.grad.abs().sum() for p in module.parameters() if p.grad is not None]
    return float(sum(grads)) if grads else 0.0


@pytest.mark.parametrize("space", SPACES)
@pytest.mark.parametrize("kind", KINDS)
def test_loss_backward_and_actions(kind: str, space: str, make_agent: Callable, make_batch: Callable) -> None:
    agent = make_agent(kind, space)
    batch = make_batch(space)
    loss, metrics = agent.loss(batch, log_step=True)
    assert loss.dim() == 0
    assert torch.isfinite(loss)
    for name in ("Actor Loss", "Critic Loss", "Sequence Length", "Batch Size (in Timesteps)"):
        assert name in metrics
    assert metrics["Unmasked Batch Size (in Timesteps)"] == float(batch.mask[:, 1:].sum())
    assert metrics["Batch Size (in Timesteps)"] == 3 * 5
    assert "PopArt mu (mean over gamma)" in metrics
    assert "Filter Mean" in metrics
    loss.backward()
    for part in (agent.actor, agent.critics, agent.traj_encoder, agent.tstep_encoder):
        assert grad_norm(part) > 0, f"{type(part).__name__} got no gradient"
    for frozen in (agent.target_critics, agent.maximized_critics, agent.previous_critics, agent.target_actor):
        assert all(p.grad is None for p in frozen.parameters())

    hidden = agent.init_hidden_state(4, "cpu")
    dim = batch.rl2s.shape[-1]
    for sample in (True, False):
        actions, hidden = agent.get_actions(
            {"observation": torch.randn(4, 1, 3)},
            torch.randn(4, 1, dim),
            torch.zeros(4, 1, dtype=torch.long),
            hidden,
            sample,
        )
        hidden = agent.reset_hidden_state(hidden, torch.tensor([True, False, False, True]))
        if space == "discrete":
            assert actions.shape == (4, 1, 1)
            assert actions.dtype == torch.long
            assert ((actions >= 0) & (actions < 4)).all()
        elif space == "multibinary":
            assert actions.shape == (4, 1, 3)
            assert actions.dtype == torch.uint8
            assert set(actions.unique().tolist()) <= {0, 1}
        else:
            assert actions.shape == (4, 1, 2)
            assert actions.dtype == torch.float32
            assert actions.abs().max() <= 1.0


@pytest.mark.parametrize("kind", KINDS)
def test_rollout_policy_is_the_last_gamma(kind: str, make_agent: Callable) -> None:
    agent = make_agent(kind, "discrete")
    obs, rl2s, times = {"observation": torch.randn(5, 1, 3)}, torch.randn(5, 1, 5), torch.zeros(5, 1)
    actions, _ = agent.get_actions(obs, rl2s, times, None, sample=False)
    states, _ = agent.get_state_embedding(obs, rl2s, times)
    probs = agent.actor(states).probs
    torch.testing.assert_close(actions[..., 0], probs[..., -1, :].argmax(-1))


@pytest.mark.parametrize(
    ("kind", "space"),
    [("agent", "discrete"), ("agent", "continuous"), ("multitask", "continuous"), ("multitask", "discrete")],
)
def test_policy_gradient_never_reaches_the_critics(
    kind: str, space: str, make_agent: Callable, make_batch: Callable
) -> None:
    # Only the policy-gradient term: no BC, critic loss weighted 0.
    agent = make_agent(kind, space, online_coeff=1.0, offline_coeff=0.0, critic_loss_weight=0.0)
    loss, _ = agent.loss(make_batch(space))
    loss.backward()
    assert grad_norm(agent.actor) > 0, "the policy gradient must train the actor"
    assert grad_norm(agent.traj_encoder) > 0, "the actor's input keeps the encoders in the graph"
    assert grad_norm(agent.critics) == 0, "actor gradients leaked into the critic parameters"
    assert all(p.grad is None for p in agent.maximized_critics.parameters())


@pytest.mark.parametrize("kind", KINDS)
def test_padding_does_not_change_the_loss(kind: str, make_agent: Callable, make_batch: Callable) -> None:
    agent = make_agent(
        kind, "continuous"
    ).eval()  # eval: input statistics frozen, so only the loss is compared
    batch = make_batch("continuous")
    garbage = copy.deepcopy(batch)
    pad = ~batch.mask
    garbage.obs["observation"][pad] = 1e3
    garbage.rl2s[pad] = -7.0
    garbage.rews[pad[:, 1:]] = float("nan")
    garbage.actions[pad[:, 1:]] = 0.5
    garbage.dones[pad[:, 1:]] = True
    losses = []
    for candidate in (batch, garbage):
        torch.manual_seed(1)
        loss, _ = copy.deepcopy(agent).loss(candidate)
        losses.append(loss)
    torch.testing.assert_close(losses[0], losses[1])


def test_mask_override_points(make_agent: Callable, make_batch: Callable) -> None:
    class NoCritic(Agent):
        def edit_critic_mask(self, batch, critic_loss, pad_mask):
            assert critic_loss.shape[2:] == (self.config.num_critics, len(self.gammas), 1)
            return torch.zeros_like(pad_mask)

    class FirstStepActor(Agent):
        def edit_actor_mask(self, batch, actor_loss, pad_mask):
            keep = torch.zeros_like(pad_mask)
            keep[:, 0] = True
            return keep

    plain = make_agent("agent", "discrete")
    for cls in (NoCritic, FirstStepActor):
        edited = cls(
            plain.config,
            obs_space=plain.obs_space,
            rl2_space=plain.rl2_space,
            action_space=plain.action_space,
            max_seq_len=8,
            tstep_encoder=registries().tstep_encoders.builder("ff"),
            traj_encoder=registries().traj_encoders.builder("identity"),
        )
        _, metrics = edited.loss(make_batch("discrete"))
        if cls is NoCritic:
            assert metrics["Critic Loss"] == 0.0
            assert metrics["Actor Loss"] != 0.0
        else:
            assert metrics["Actor Loss"] != 0.0


@pytest.mark.parametrize("kind", KINDS)
def test_non_finite_loss_names_the_term(kind: str, make_agent: Callable, make_batch: Callable) -> None:
    agent = make_agent(kind, "discrete")
    batch = make_batch("discrete")
    batch.rews[1, 2] = float("nan")
    with pytest.raises(NonFiniteLossError, match="critic loss is nan"):
        agent.loss(batch)
    assert torch.isfinite(agent.popart.mu).all(), "a NaN target must not poison PopArt"
    batch = make_batch("discrete")
    agent.actor.net.net[-1].bias.data.fill_(float("nan"))
    with pytest.raises(NonFiniteLossError, match="actor loss is nan"):
        agent.loss(batch)


def test_fake_filter_without_policy_gradient_skips_the_critics(
    make_agent: Callable, make_batch: Callable
) -> None:
    agent = make_agent("agent", "continuous", fake_filter=True, online_coeff=0.0, offline_coeff=1.0)
    batch = make_batch("continuous")
    replica = copy.deepcopy(agent)  # replays the loss's one update of the input statistics
    loss, metrics = agent.loss(batch)
    assert metrics["Critic Loss"] == 0.0
    states, _ = replica.get_state_embedding(batch.obs, batch.rl2s, batch.time_idxs, pad_mask=~batch.mask)
    log_prob = replica.actor(states[:, :-1]).log_prob(
        batch.actions.unsqueeze(-2).expand(-1, -1, len(agent.gammas), -1)
    )
    valid = batch.mask[:, 1:]
    expected = -log_prob[valid].mean()
    torch.testing.assert_close(loss, expected, rtol=1e-4, atol=1e-4)


def test_configuration_errors_name_the_fix(make_agent: Callable) -> None:
    with pytest.raises(ValueError, match="online_coeff"):
        make_agent("agent", spaces.MultiBinary(3), online_coeff=1.0)
    with pytest.raises(ValueError, match="num_critics_td"):
        make_agent("agent", "discrete", num_critics=2, num_critics_td=3)
    with pytest.raises(TypeError, match=r"spaces\.Dict"):
        Agent(
            make_agent("agent", "discrete").config,
            obs_space=spaces.Box(-1, 1, (3,)),
            rl2_space=spaces.Box(-1, 1, (5,)),
            action_space=spaces.Discrete(4),
            max_seq_len=4,
            tstep_encoder=registries().tstep_encoders.builder("ff"),
            traj_encoder=registries().traj_encoders.builder("identity"),
        )


@pytest.mark.parametrize("popart", [False, True])
def test_agent_critic_loss_by_hand(popart: bool, make_agent: Callable, make_batch: Callable) -> None:
    # One critic, one gamma, no actor terms: the critic regresses Q(s, soft one-hot) onto
    # y = 3·r + 0.8·(1 - terminated)·V_target(s'), V the exact expectation under the target policy; with PopArt,
    # V_target is de-normalised with the statistics from before the update, and w·Q + b regresses (y - mu) / sigma
    # with the statistics after it.
    agent = make_agent(
        "agent",
        "discrete",
        num_critics=1,
        num_critics_td=1,
        use_multigamma=False,
        gamma=0.8,
        reward_multiplier=3.0,
        online_coeff=0.0,
        offline_coeff=0.0,
        critic_loss_weight=1.0,
        popart={"enabled": popart, "beta": 0.3},
    ).eval()  # eval: input statistics frozen, so the hand computation sees the same states
    batch = make_batch("discrete")
    agent.popart.update_stats(torch.full((2, 1, 1), 4.0), torch.ones(2, 1, 1, dtype=torch.bool))
    before = copy.deepcopy(agent.popart)
    loss, _ = agent.loss(batch)
    after = agent.popart
    with torch.no_grad():
        states, _ = agent.get_state_embedding(batch.obs, batch.rl2s, batch.time_idxs)
        now, nxt = states[:, :-1], states[:, 1:]
        soft = agent.policy_dist.soften_buffer_action(batch.actions)[None, :, :, None, :]
        q_buffer = agent.critics(now, soft)[0, :, :, 0, 0, 0]
        next_probs = agent.target_actor(nxt).probs[None]  # (1, B, T, 1, A)
        next_value = agent.target_critics(nxt, next_probs)[0, :, :, 0, 0, 0]
        raw_next = next_value
        if popart:
            raw_next = (before.sigma * (before.w * next_value + before.b) + before.mu).squeeze(0)
        target = 3.0 * batch.rews[..., 0] + 0.8 * (1.0 - batch.dones[..., 0].float()) * raw_next
        prediction = q_buffer
        if popart:
            prediction = (after.w * q_buffer + after.b).squeeze(0)
            target = ((target - after.mu) / after.sigma).squeeze(0)
    valid = batch.mask[:, 1:]
    if popart:
        assert not torch.equal(before.mu, after.mu), "PopArt statistics must move with the new targets"
    torch.testing.assert_close(
        loss.detach(), (prediction - target).pow(2)[valid].mean(), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("online_coeff", "use_min"), [(0.5, True), (0.0, False)])
def test_target_reduction_min_with_policy_gradient_else_mean(
    kind: str,
    online_coeff: float,
    use_min: bool,
    make_agent: Callable,
    make_batch: Callable,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import amago_agents.agent
    import amago_agents.multitask

    seen = []

    def recording(values: torch.Tensor, subset_size: int, use_min: bool) -> torch.Tensor:
        seen.append((subset_size, use_min))
        return reduce_ensemble(values, subset_size, use_min)

    module = amago_agents.agent if kind == "agent" else amago_agents.multitask
    monkeypatch.setattr(module, "reduce_ensemble", recording)
    agent = make_agent(kind, "continuous", online_coeff=online_coeff, num_critics=3, num_critics_td=2)
    loss, metrics = agent.loss(make_batch("continuous"))
    assert seen == [(2, use_min)]
    assert loss.item() == pytest.approx(metrics["Actor Loss"] + 10.0 * metrics["Critic Loss"], rel=1e-5)


@pytest.mark.parametrize(
    ("kind", "space", "options"),
    [
        (
            "agent",
            "continuous",
            {"continuous_dist": {"type": "beta"}, "num_actions_for_value_in_actor_loss": 2},
        ),
        ("agent", "continuous", {"continuous_dist": {"type": "gmm", "modes": 2}, "online_coeff": 0.0}),
        ("agent", "discrete", {"actor": {"type": "residual", "feature_dim": 8, "residual_ff_dim": 16}}),
        ("agent", "discrete", {"n_step": 3, "use_target_actor": False, "fbc_filter": {"type": "exp"}}),
        (
            "multitask",
            "continuous",
            {"online_coeff": 0.5, "label_type": "hlgauss", "fbc_filter": {"type": "leaky_relu"}},
        ),
        (
            "multitask",
            "discrete",
            {"online_coeff": 0.5, "num_actions_for_value_in_critic_loss": 2, "use_symlog": False},
        ),
    ],
)
def test_option_variants_train(
    kind: str, space: str, options: dict, make_agent: Callable, make_batch: Callable
) -> None:
    agent = make_agent(kind, space, **options)
    loss, metrics = agent.loss(make_batch(space), log_step=True)
    loss.backward()
    assert torch.isfinite(loss)
    assert metrics["Critic Loss"] > 0
    assert grad_norm(agent.actor) > 0
    assert grad_norm(agent.critics) > 0


@pytest.mark.parametrize("kind", KINDS)
def test_padding_stays_out_of_input_statistics_in_training(
    kind: str, make_agent: Callable, make_batch: Callable
) -> None:
    agent = make_agent(kind, "continuous").train()
    norm = agent.tstep_encoder.input_norm
    assert norm is not None, "the ff timestep encoder normalises inputs by default"
    batch = make_batch("continuous")
    garbage = copy.deepcopy(batch)
    pad = ~batch.mask
    assert pad.any()
    garbage.obs["observation"][pad] = 1e3
    garbage.rl2s[pad] = -7.0
    stats = []
    for candidate in (batch, garbage):
        trained = copy.deepcopy(agent)
        trained.loss(candidate)
        stats.append(
            (trained.tstep_encoder.input_norm.mu.clone(), trained.tstep_encoder.input_norm.nu.clone())
        )
    torch.testing.assert_close(stats[0][0], stats[1][0])
    torch.testing.assert_close(stats[0][1], stats[1][1])
    assert not torch.equal(stats[0][0], norm.mu)  # the real timesteps did update the statistics
