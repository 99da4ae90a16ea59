"""``MultiTaskAgent``: AMAGO-2's classification-critic learning update (entry point ``multitask``)."""

from __future__ import annotations

import warnings

import torch

from amago_agents.base import BaseAgent
from amago_agents.distributions import OneHotDist, Policy
from amago_agents.heads import CriticEnsemble
from amago_agents.returns import nstep_targets, reduce_ensemble
from amago_agents.specs import MultiTaskAgentConfig
from amago_agents.twohot import INIT_EDGE_BINS, ValueBins
from amago_core.data.batch import Batch
from amago_nets.real_steps import RealSteps


class MultiTaskAgent(BaseAgent):
    """Two-hot classification critics over symlog bins, trained with cross-entropy, and filtered behaviour
    cloning (no policy gradient by default), so tasks whose returns differ by orders of magnitude share one
    network without one task's scale drowning the others.

    Discrete actions are treated like continuous ones: the critics take one-hot actions as input, V(s) is
    estimated from policy samples, and the (optional) policy gradient uses straight-through Gumbel-softmax
    samples. Discrete buffer actions reach the critic clipped and renormalised as in :class:`Agent`; their
    behaviour-cloning log-prob is the log-probability of their index (as AMAGO's one-hot categorical reads it).

    Built as ``MultiTaskAgent(config, *, obs_space, rl2_space, action_space, max_seq_len, tstep_encoder,
    traj_encoder)``; see :class:`amago_agents.base.BaseAgent`.
    """

    config: MultiTaskAgentConfig

    def __init__(self, config: MultiTaskAgentConfig, **context: object) -> None:
        super().__init__(config, **context)  # type: ignore[arg-type]
        if config.min_return is None or config.max_return is None:
            warnings.warn(
                "multitask: min_return/max_return unset, so the value bins span ±100,000 (reward-multiplied) and "
                "are coarse; set them to the range of returns × reward_multiplier of your tasks.",
                stacklevel=2,
            )
        self.bins = self.value_bins()
        value = config.critic_init_value
        if value is not None and (margin := self.bins.bins_from_edge(value)) < INIT_EDGE_BINS:
            warnings.warn(
                f"multitask: critic_init_value={value} is {margin} bins from the edge of the {config.output_bins} "
                "bins, so the critics' first predictions lean inward; widen min_return/max_return or add "
                "output_bins to start exactly there.",
                stacklevel=2,
            )

    def value_bins(self) -> ValueBins:
        """The critics' value bins, as the config describes them."""
        config = self.config
        low, high = config.return_range
        return ValueBins(
            low,
            high,
            config.output_bins,
            use_symlog=config.use_symlog,
            label_type=config.label_type,
            hlgauss_sigma=config.hlgauss_sigma,
        )

    def build_critics(self) -> CriticEnsemble:
        """Every action space feeds the action to the critic, which outputs ``output_bins`` logits; with
        ``critic_init_value`` every critic's output bias starts as a bump over the bins at that value."""
        critics = CriticEnsemble(
            self.state_dim,
            self.action_dim,
            self.gammas,
            self.config.num_critics,
            self.config.critic,
            action_input=True,
            out_dim=self.config.output_bins,
        )
        value = self.config.critic_init_value
        if value is not None:
            # Called from BaseAgent.__init__ before self.bins exists; the targets are copies made after this.
            bins = self.value_bins()
            bias = critics.out.bias
            if bias is None:  # EnsembleLinear's default keeps a bias
                msg = "multitask: critic_init_value needs the critics' output layer to have a bias."
                raise RuntimeError(msg)
            with torch.no_grad():
                bias.copy_(bins.init_logits(value).expand_as(bias))
        return critics

    def policy_actions(self, policy: Policy, samples: int, reparameterised: bool) -> torch.Tensor:
        """``(K, B, T, G, A)`` sampled actions (one-hot for Discrete; Gumbel straight-through when
        ``reparameterised``)."""
        return self.sample_actions(policy, samples, reparameterised)

    def values(self, logits: torch.Tensor) -> torch.Tensor:
        """Scalar values ``(..., 1)`` (raw, reward-multiplied) of critic logits ``(..., bins)``."""
        return self.bins.logits_to_values(logits).unsqueeze(-1)

    def buffer_actions(self, batch: Batch) -> torch.Tensor:
        """As :meth:`BaseAgent.buffer_actions`; Discrete one-hots are clipped and renormalised like the policy's
        probabilities (AMAGO's critic input). The behaviour-cloning log-prob reads their argmax."""
        actions = super().buffer_actions(batch)
        if isinstance(self.policy_dist, OneHotDist):
            allowed_now, _ = self.allowed_in_window(batch)
            return self.policy_dist.soften_buffer_action(
                actions, allowed_now[..., 0, :] if allowed_now is not None else None
            )
        return actions

    def loss_terms(
        self, batch: Batch, states: torch.Tensor, valid: torch.Tensor, metrics: dict[str, float] | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Actor loss ``(B, T, G, 1)`` and cross-entropy critic loss ``(B, T, C, G, 1)``."""
        cfg = self.config
        now, after = states[:, :-1], states[:, 1:].detach()
        batch_size, steps = now.shape[:2]
        num_gammas = len(self.gammas)
        per_gamma_actions = (
            self.buffer_actions(batch).unsqueeze(-2).expand(batch_size, steps, num_gammas, self.action_dim)
        )
        real = RealSteps(valid)  # the heads skip padded timesteps
        allowed_now, allowed_after = self.allowed_in_window(batch)
        policy = self.actor(now, real, allowed_now)
        actor_loss = torch.zeros(batch_size, steps, num_gammas, 1, device=states.device)
        critic_loss = None
        logits_buffer = None
        use_filter = cfg.offline_coeff > 0 and not cfg.fake_filter
        if not (cfg.fake_filter and cfg.online_coeff == 0):
            logits_buffer = self.critics(now, per_gamma_actions.unsqueeze(0), real)[0]  # (B, T, C, G, bins)
            with torch.no_grad():
                next_actor = self.target_actor if cfg.use_target_actor else self.actor
                next_actions = self.policy_actions(
                    next_actor(after, real, allowed_after),
                    cfg.num_actions_for_value_in_critic_loss,
                    reparameterised=False,
                )
                # Targets stay in raw (reward-multiplied) units: the bins, not PopArt, absorb the scale.
                next_logits = self.target_critics(after, next_actions, real)
                next_q = self.values(next_logits).mean(0)  # (B, T, C, G, 1)
                next_q = reduce_ensemble(next_q, cfg.num_critics_td, use_min=cfg.online_coeff > 0)
                rewards = batch.rews.float() * cfg.reward_multiplier
                targets = nstep_targets(rewards, batch.dones, next_q, self.gamma_values, cfg.n_step, valid)
                self.popart.update_stats(targets, valid[..., None, None])  # for the policy gradient and logs
                labels = self.bins.to_labels(targets.squeeze(-1))  # (B, T, G, bins)
            log_probs = logits_buffer.log_softmax(-1)
            critic_loss = -(labels.unsqueeze(2) * log_probs).sum(-1, keepdim=True)
            if metrics is not None:
                self.add_target_metrics(batch, targets, valid, metrics)
                raw = self.values(logits_buffer.detach())
                self.add_value_metrics(raw, self.popart.normalize_values(raw), valid, metrics)
                self._add_bin_metrics(logits_buffer.detach(), valid, metrics)

        if cfg.offline_coeff > 0:
            log_prob = policy.log_prob(per_gamma_actions)  # (B, T, G, 1)
            if use_filter:
                if logits_buffer is None:  # computed above whenever use_filter
                    msg = "MultiTaskAgent: the filter needs the buffer actions' critic logits, which were not computed."
                    raise RuntimeError(msg)
                with torch.no_grad():
                    sampled = self.policy_actions(policy, cfg.num_actions_for_value_in_actor_loss, False)
                    state_value = self.values(self.critics(now.detach(), sampled, real)).mean(dim=(0, 3))
                    # Raw return units (reward-multiplied), unlike Agent's normalised ones.
                    advantage = self.values(logits_buffer.detach()).mean(2) - state_value
                    weights = self.fbc_filter(advantage)
                if metrics is not None:
                    self.add_filter_metrics(log_prob.detach(), weights, advantage, valid, metrics)
            else:
                weights = torch.ones_like(log_prob)
            actor_loss = actor_loss - cfg.offline_coeff * weights * log_prob
        if cfg.online_coeff > 0:
            sampled = self.policy_actions(
                policy, cfg.num_actions_for_value_in_actor_loss, reparameterised=True
            )
            policy_logits = self.maximized_critics(now.detach(), sampled, real)
            q_policy = self.values(policy_logits).mean(0)  # (B, T, C, G, 1)
            actor_loss = actor_loss - cfg.online_coeff * self.popart.normalize_values(q_policy.amin(2))
        if metrics is not None:
            self.add_policy_metrics(policy, valid, metrics)
        return actor_loss, critic_loss

    def _add_bin_metrics(self, logits: torch.Tensor, valid: torch.Tensor, metrics: dict[str, float]) -> None:
        """Mean index of the most likely bin (AMAGO logs histograms; a JSONL log takes scalars)."""
        if not valid.any():
            return
        top = logits.argmax(-1)[valid].float()  # (N, C, G)
        metrics["Maximum Bin (All Gammas)"] = float(top.mean())
        metrics["Maximum Bin (Target Gamma)"] = float(top[..., -1].mean())
