"""``Agent``: AMAGO's off-policy actor-critic learning update (entry point ``agent``)."""

from __future__ import annotations

import torch

from amago_agents.base import BaseAgent
from amago_agents.distributions import OneHotDist, Policy
from amago_agents.heads import CriticEnsemble
from amago_agents.returns import nstep_targets, reduce_ensemble
from amago_agents.specs import AgentConfig
from amago_core.data.batch import Batch
from amago_nets.real_steps import RealSteps


class Agent(BaseAgent):
    """Off-policy actor-critic over the shared timestep and trajectory encoders, for every gamma at once.

    Critic: an ensemble regressing PopArt-normalised n-step targets built from target critics (REDQ subset:
    min with the policy gradient on, mean otherwise). Actor: ``online_coeff · -Q(s, a ~ pi)`` on a copy of the
    critics one update stale (its parameters never receive the actor's gradient; it sees detached states),
    plus ``offline_coeff · -f(A) log pi(a_buffer | s)``. No entropy bonus: exploration comes from sampling and
    the env's exploration wrapper.

    Discrete actions: the critics output one value per action and every expectation over the policy is exact
    (its probability vector dotted with them). With ``discrete_like_continuous`` they are treated like
    continuous actions instead: the critics take one-hots as input, expectations average sampled one-hots, and
    the policy gradient goes through straight-through Gumbel-softmax samples.

    Built as ``Agent(config, *, obs_space, rl2_space, action_space, max_seq_len, tstep_encoder,
    traj_encoder)``; see :class:`amago_agents.base.BaseAgent`.
    """

    config: AgentConfig

    @property
    def per_action_critics(self) -> bool:
        """Discrete actions with one critic output per action (off with ``discrete_like_continuous``)."""
        return self.discrete and not self.config.discrete_like_continuous

    def build_critics(self) -> CriticEnsemble:
        """Discrete actions: one value per (gamma, action) from the state; else (and with
        ``discrete_like_continuous``) the action is an input."""
        return CriticEnsemble(
            self.state_dim,
            self.action_dim,
            self.gammas,
            self.config.num_critics,
            self.config.critic,
            action_input=not self.per_action_critics,
        )

    def policy_actions(self, policy: Policy, samples: int, reparameterised: bool) -> torch.Tensor:
        """``(K, B, T, G, A)`` actions for the critics: the probability vector itself for discrete policies
        (the critic's dot product makes Q(s, p) the exact expectation, so K = 1), else K samples (one-hots for
        discrete actions treated like continuous ones)."""
        if self.per_action_critics:
            return policy.probs.unsqueeze(0)  # type: ignore[attr-defined]
        return self.sample_actions(policy, samples, reparameterised)

    def loss_terms(
        self, batch: Batch, states: torch.Tensor, valid: torch.Tensor, metrics: dict[str, float] | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Actor loss ``(B, T, G, 1)`` and critic loss ``(B, T, C, G, 1)`` (see the class docstring)."""
        cfg = self.config
        now, after = states[:, :-1], states[:, 1:].detach()
        batch_size, steps = now.shape[:2]
        num_gammas = len(self.gammas)
        buffer_actions = self.buffer_actions(batch)  # (B, T, A)
        per_gamma_actions = buffer_actions.unsqueeze(-2).expand(
            batch_size, steps, num_gammas, self.action_dim
        )
        critic_actions = per_gamma_actions
        real = RealSteps(valid)  # the heads skip padded timesteps
        allowed_now, allowed_after = self.allowed_in_window(batch)
        if isinstance(self.policy_dist, OneHotDist):
            critic_actions = self.policy_dist.soften_buffer_action(per_gamma_actions, allowed_now)

        policy = self.actor(now, real, allowed_now)
        actor_loss = torch.zeros(batch_size, steps, num_gammas, 1, device=states.device)
        critic_loss = None
        q_buffer = None
        use_filter = cfg.offline_coeff > 0 and not cfg.fake_filter
        if not (cfg.fake_filter and cfg.online_coeff == 0):
            q_buffer = self.critics(now, critic_actions.unsqueeze(0), real)[0]  # (B, T, C, G, 1)
            with torch.no_grad():
                next_actor = self.target_actor if cfg.use_target_actor else self.actor
                next_actions = self.policy_actions(
                    next_actor(after, real, allowed_after),
                    cfg.num_actions_for_value_in_critic_loss,
                    reparameterised=False,
                )
                next_q = self.popart(self.target_critics(after, next_actions, real).mean(0), normalized=False)
                next_q = reduce_ensemble(next_q, cfg.num_critics_td, use_min=cfg.online_coeff > 0)
                rewards = batch.rews.float() * cfg.reward_multiplier
                targets = nstep_targets(rewards, batch.dones, next_q, self.gamma_values, cfg.n_step, valid)
                # Statistics move first, then the targets are normalised with them (PopArt's order).
                self.popart.update_stats(targets, valid[..., None, None])
                normalized_targets = self.popart.normalize_values(targets)
            critic_loss = (self.popart(q_buffer) - normalized_targets.unsqueeze(2)).pow(2)
            if metrics is not None:
                self.add_target_metrics(batch, targets, valid, metrics)
                self.add_value_metrics(
                    self.popart(q_buffer.detach(), normalized=False),
                    self.popart(q_buffer.detach()),
                    valid,
                    metrics,
                )

        q_policy = None
        if cfg.online_coeff > 0 or use_filter:
            policy_actions = self.policy_actions(
                policy, cfg.num_actions_for_value_in_actor_loss, reparameterised=cfg.online_coeff > 0
            )
            # Detached states and frozen parameters: the policy gradient reaches the actor (and, through the
            # actor's own input, the encoders) but never the critics.
            q_policy = self.maximized_critics(now.detach(), policy_actions, real).mean(0)  # (B, T, C, G, 1)
        if cfg.online_coeff > 0:
            if q_policy is None:  # computed above whenever online_coeff > 0
                msg = "Agent: online_coeff > 0 but no policy values were computed."
                raise RuntimeError(msg)
            actor_loss = actor_loss - cfg.online_coeff * self.popart(q_policy.amin(2))
        if cfg.offline_coeff > 0:
            log_prob = policy.log_prob(per_gamma_actions)  # (B, T, G, 1)
            if use_filter:
                if q_buffer is None or q_policy is None:  # both computed above whenever use_filter
                    msg = "Agent: the filter needs buffer and policy values, which were not computed."
                    raise RuntimeError(msg)
                with torch.no_grad():
                    # Raw critic-head outputs: PopArt's affine map is per gamma and positive, so signs agree.
                    advantage = q_buffer.mean(2) - q_policy.mean(2)
                    weights = self.fbc_filter(advantage)
                if metrics is not None:
                    self.add_filter_metrics(log_prob.detach(), weights, advantage, valid, metrics)
            else:
                weights = torch.ones_like(log_prob)
            actor_loss = actor_loss - cfg.offline_coeff * weights * log_prob
        if metrics is not None:
            self.add_policy_metrics(policy, valid, metrics)
        return actor_loss, critic_loss
