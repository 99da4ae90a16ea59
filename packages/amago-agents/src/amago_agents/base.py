"""``BaseAgent``: the encoders, heads, targets, rollout interface and loss bookkeeping both agents share.

Subclasses build their critics (:meth:`BaseAgent.build_critics`) and compute the unmasked per-timestep loss
terms (:meth:`BaseAgent.loss_terms`); masking, reduction, the non-finite check and the metrics that every
update reports live here.

Time alignment of a :class:`amago_core.data.Batch` with L observations: state t is the trajectory encoder's
output at observation t; transition t (``t < T = L - 1``) takes action t from state t to state t + 1, earns
reward t and is real iff observation t + 1 is (``batch.transition_mask``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from amago_agents.distributions import OneHotPolicy, Policy, action_dim_of, make_policy_distribution
from amago_agents.filters import make_filter
from amago_agents.heads import ActorHead, CriticEnsemble
from amago_agents.popart import PopArt
from amago_agents.specs import AgentConfig, MultiTaskAgentConfig
from amago_core.config.component import ComponentConfig
from amago_core.data.batch import Batch
from amago_core.rollout.action_mask import ACTION_MASK_KEY
from amago_nets.base import TrajEncoder, TstepEncoder, encode_window
from amago_nets.precision import full_precision, to_full

EncoderBuilder = Callable[..., nn.Module]
"""How an agent receives an encoder: a callable that builds it from the inferred context (a registry's
``builder(choice)``, the experiment's resolved component, or a class such as AMAGO's ``FFTstepEncoder``)."""


def _build_encoder(builder: EncoderBuilder, what: str, **context: Any) -> nn.Module:
    """Calls ``builder`` with the inferred context; a name or config (what amago 0.1 took) gets a clear error."""
    if isinstance(builder, str | Mapping | ComponentConfig) or not callable(builder):
        group = "tstep_encoders" if what == "tstep_encoder" else "traj_encoders"
        msg = (
            f"{what}={builder!r}: an agent takes a builder for its encoders, not a name or config; pass "
            f"registries().{group}.builder({builder!r}) (amago_core.plugins.registries), or a class."
        )
        raise TypeError(msg)
    return builder(**context)


class NonFiniteLossError(FloatingPointError):
    """A loss term became NaN or infinite; training on it would corrupt every parameter."""


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over the entries where ``mask`` (broadcast to ``values``) is True."""
    mask = mask.to(torch.bool).expand_as(values)
    # where (not a product) so that NaN in ignored entries (e.g. padding) cannot leak in as NaN * 0.
    kept = torch.where(mask, values, torch.zeros_like(values))
    return kept.sum() / (mask.sum() + 1e-5)


class BaseAgent(nn.Module):
    """Shared skeleton of the off-policy agents.

    Args:
        config: the agent's validated config.
        obs_space: ``gymnasium.spaces.Dict`` of observation keys.
        rl2_space: ``Box((1 + A,))``: previous reward, then previous action.
        action_space: Discrete, MultiBinary (1-d) or Box (1-d, actions in [-1, 1]).
        max_seq_len: longest training window (passed to the trajectory encoder).
        tstep_encoder: builds the timestep encoder, called as ``f(obs_space=..., rl2_space=...)``: a registry's
            ``builder(choice)`` or a class (AMAGO's custom-encoder pattern).
        traj_encoder: builds the trajectory encoder, called as ``f(tstep_dim=..., max_seq_len=...)``.
    """

    gamma_values: torch.Tensor
    """The discount factors as a (non-persistent) buffer that follows the agent's device."""

    def __init__(
        self,
        config: AgentConfig | MultiTaskAgentConfig,
        *,
        obs_space: spaces.Space,
        rl2_space: spaces.Box,
        action_space: spaces.Space,
        max_seq_len: int,
        tstep_encoder: EncoderBuilder,
        traj_encoder: EncoderBuilder,
    ) -> None:
        super().__init__()
        if not isinstance(obs_space, spaces.Dict):
            msg = (
                f"{config.kind}: obs_space must be a gymnasium.spaces.Dict (what AMAGOEnv exposes), got "
                f"{type(obs_space).__name__}; wrap it as spaces.Dict({{'observation': space}})."
            )
            raise TypeError(msg)
        self.config = config
        self.obs_space, self.rl2_space, self.action_space = obs_space, rl2_space, action_space
        self.max_seq_len = int(max_seq_len)
        self.action_dim = action_dim_of(action_space)
        self.discrete = isinstance(action_space, spaces.Discrete)
        self.multibinary = isinstance(action_space, spaces.MultiBinary)
        self.multidiscrete = isinstance(action_space, spaces.MultiDiscrete)
        """A factored policy: one categorical per dimension, critics that take the one-hots as input."""
        self.action_masked = ACTION_MASK_KEY in obs_space.spaces
        """The env gives an action mask (``obs["action_mask"]``): the policy stays on the allowed actions."""
        if self.action_masked and not (self.discrete or self.multidiscrete):
            msg = (
                f"{config.kind}: the env gives an action mask, but its actions are {action_space!r}; this agent "
                "masks Discrete and MultiDiscrete actions. Drop the env's action_mask_key."
            )
            raise ValueError(msg)
        # The timestep encoder sees the observation without the mask (the mask steers the policy, not memory).
        encoder_obs_space = spaces.Dict({k: v for k, v in obs_space.spaces.items() if k != ACTION_MASK_KEY})

        # A builder is typed as returning a plain Module; what it builds is a TstepEncoder / TrajEncoder (every
        # encoder subclasses them), whose emb_dim and hidden-state methods the agent calls.
        self.tstep_encoder = cast(
            TstepEncoder,
            _build_encoder(tstep_encoder, "tstep_encoder", obs_space=encoder_obs_space, rl2_space=rl2_space),
        )
        self.traj_encoder = cast(
            TrajEncoder,
            _build_encoder(
                traj_encoder,
                "traj_encoder",
                tstep_dim=self.tstep_encoder.emb_dim,
                max_seq_len=self.max_seq_len,
            ),
        )
        self.state_dim = int(self.traj_encoder.emb_dim)

        self.gammas = config.gammas
        self.register_buffer("gamma_values", torch.tensor(self.gammas, dtype=torch.float32), persistent=False)
        self.policy_dist = make_policy_distribution(
            action_space, config.discrete_dist, config.continuous_dist
        )
        self.actor = ActorHead(self.state_dim, len(self.gammas), self.policy_dist, config.actor)
        self.critics = self.build_critics()
        self.popart = PopArt(len(self.gammas), config.popart)
        self.fbc_filter = make_filter(config.fbc_filter)
        # Targets for the TD backup; `maximized_critics` is the copy the policy gradient pushes against (its
        # parameters never receive gradients); `previous_critics` holds the critics as they were one
        # optimiser update ago, so the maximized copy lags by exactly one update (AMAGO's behaviour).
        self.target_critics = self._frozen_copy(self.critics)
        self.maximized_critics = self._frozen_copy(self.critics)
        self.previous_critics = self._frozen_copy(self.critics)
        self.target_actor = self._frozen_copy(self.actor)
        if config.online_coeff > 0 and not self.policy_dist.actions_differentiable:
            msg = (
                f"{config.kind}: online_coeff={config.online_coeff} needs reparameterised actions, which the "
                f"{type(self.policy_dist).__name__} policy for {action_space!r} cannot give; set online_coeff = 0 "
                "or choose continuous_dist type tanh_gaussian or beta."
            )
            raise ValueError(msg)

    # ---- construction --------------------------------------------------------------------------------

    def build_critics(self) -> CriticEnsemble:
        """The online critic ensemble (targets are copies of it)."""
        raise NotImplementedError

    @staticmethod
    def _frozen_copy(module: nn.Module) -> nn.Module:
        clone = copy.deepcopy(module)
        for p in clone.parameters():
            p.requires_grad_(False)
        return clone

    # ---- what the experiment loop calls ------------------------------------------------------------

    def trainable_parameters(self) -> Iterator[nn.Parameter]:
        """Parameters the optimiser updates: both encoders, the critics and the actor (no targets/copies)."""
        for module in (self.tstep_encoder, self.traj_encoder, self.critics, self.actor):
            yield from (p for p in module.parameters() if p.requires_grad)

    @torch.no_grad()
    def hard_sync_targets(self) -> None:
        """Copies the online critics and actor into every target and copy."""
        for copy_of_critics in (self.target_critics, self.maximized_critics, self.previous_critics):
            copy_of_critics.load_state_dict(self.critics.state_dict())
        self.target_actor.load_state_dict(self.actor.state_dict())

    @torch.no_grad()
    def soft_sync_targets(self) -> None:
        """Call once per optimiser update, after ``optimizer.step()``.

        Moves the target critics and target actor ``tau`` of the way towards the online networks (Polyak), and
        advances the maximized critics to the online critics as they were *before* this update, so the policy
        gradient always pushes against a copy one update stale, as in AMAGO.
        """
        tau = self.config.tau
        for target, online in ((self.target_critics, self.critics), (self.target_actor, self.actor)):
            target_params: list[torch.Tensor] = list(target.parameters())
            torch._foreach_lerp_(target_params, [p.detach() for p in online.parameters()], tau)
        # Typed as Tensor lists: the _foreach ops take list[Tensor], and list is invariant in its item type.
        maximized: list[torch.Tensor] = list(self.maximized_critics.parameters())
        previous: list[torch.Tensor] = list(self.previous_critics.parameters())
        torch._foreach_copy_(maximized, previous)
        torch._foreach_copy_(previous, [p.detach() for p in self.critics.parameters()])

    def grad_norms(self) -> dict[str, float]:
        """L2 norms of the current gradients per part, with AMAGO's metric names (call after backward)."""
        parts = {
            "Actor Grad Norm": self.actor,
            "Critic Grad Norm": self.critics,
            "TrajEncoder Grad Norm": self.traj_encoder,
            "TstepEncoder Grad Norm": self.tstep_encoder,
        }
        norms = {}
        for name, module in parts.items():
            grads = [p.grad.detach().flatten() for p in module.parameters() if p.grad is not None]
            norms[name] = float(torch.cat(grads).norm()) if grads else 0.0
        return norms

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> Any:
        """Rollout state of the trajectory encoder for ``batch_size`` fresh episodes."""
        return self.traj_encoder.init_hidden_state(batch_size, device)

    def reset_hidden_state(self, hidden_state: Any, dones: np.ndarray | torch.Tensor) -> Any:
        """Resets the rollout state of the rows where ``dones`` is True."""
        return self.traj_encoder.reset_hidden_state(hidden_state, dones)

    # ---- acting -----------------------------------------------------------------------------------------

    def get_state_embedding(
        self,
        obs: dict[str, torch.Tensor],
        rl2s: torch.Tensor,
        time_idxs: torch.Tensor,
        hidden_state: Any = None,
        pad_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Timestep encoder then trajectory encoder: ``(B, L, ...)`` inputs to ``(B, L, D)`` states.

        ``time_idxs`` may be ``(B, L)`` or ``(B, L, 1)``; ``pad_mask`` (B, L) marks padded training timesteps.
        """
        if time_idxs.dim() == 3:
            time_idxs = time_idxs.squeeze(-1)
        if self.action_masked:
            obs = {key: value for key, value in obs.items() if key != ACTION_MASK_KEY}
        embedded = self.tstep_encoder(obs, rl2s, pad_mask=pad_mask)
        if hidden_state is None:
            # A training window: encoders that take a pad_mask skip the padding's work.
            return encode_window(self.traj_encoder, embedded, time_idxs, pad_mask)
        return self.traj_encoder(embedded, time_idxs, hidden_state)

    @torch.no_grad()
    def get_actions(
        self,
        obs: dict[str, torch.Tensor],
        rl2s: torch.Tensor,
        time_idxs: torch.Tensor,
        hidden_state: Any = None,
        sample: bool = True,
    ) -> tuple[torch.Tensor, Any]:
        """Actions of the rollout policy (the last gamma's) for ``(N, L, ...)`` inputs.

        Rollouts feed one step at a time (L = 1) with the hidden state from the previous call.

        Args:
            obs: observation key -> ``(N, L, ...)``.
            rl2s: ``(N, L, 1 + A)`` previous reward and action.
            time_idxs: ``(N, L)`` or ``(N, L, 1)`` steps since each episode started.
            hidden_state: the trajectory encoder's rollout state (None: a fresh window).
            sample: sample from the policy (else its deterministic mode).

        Returns:
            ``(actions, hidden_state)``: Discrete → int64 indices ``(N, L, 1)``; MultiDiscrete → int64 indices
            ``(N, L, D)``; MultiBinary → uint8 ``(N, L, A)``; Box → float32 ``(N, L, A)`` in [-1, 1].
        """
        states, hidden_state = self.get_state_embedding(obs, rl2s, time_idxs, hidden_state)
        with full_precision():  # the head's network in the autocast dtype, sampling in fp32
            # Only the rollout gamma's policy (the last one) is built and sampled: the others never act.
            policy = self.actor.acting_policy(states, allowed=self.allowed_actions(obs))
            actions = policy.sample() if sample else policy.mode()
        actions = actions[..., -1, :]
        if self.discrete or self.multidiscrete:
            return actions.long(), hidden_state
        if self.multibinary:
            return actions.to(torch.uint8), hidden_state
        return actions.float(), hidden_state

    def allowed_actions(self, obs: dict[str, torch.Tensor]) -> torch.Tensor | None:
        """The env's action mask in ``obs`` as ``(..., L, 1, A)`` bools (one for every gamma's policy), or None
        when the env gives none."""
        if not self.action_masked:
            return None
        return obs[ACTION_MASK_KEY].bool().unsqueeze(-2)

    def allowed_in_window(self, batch: Batch) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The action masks of a training window's transitions: at each step ``t`` (the action taken) and at
        ``t + 1`` (the next action of the TD target), each ``(B, T, 1, A)``; None when the env gives none."""
        allowed = self.allowed_actions(batch.obs)
        if allowed is None:
            return None, None
        return allowed[:, :-1], allowed[:, 1:]

    # ---- learning -------------------------------------------------------------------------------------

    def edit_actor_mask(self, batch: Batch, actor_loss: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        """Override to change where the actor loss counts.

        The heads skip padded transitions (their outputs there are zeros), so only real transitions carry
        meaningful loss terms; narrow the default mask, never widen it past them.

        Args:
            batch: the training batch (torch tensors).
            actor_loss: unmasked actor loss ``(B, T, G, 1)``.
            pad_mask: default mask ``(B, T, 1, 1)``, True where the transition is real.

        Returns:
            A boolean mask broadcastable to ``actor_loss``.
        """
        return pad_mask

    def edit_critic_mask(
        self, batch: Batch, critic_loss: torch.Tensor, pad_mask: torch.Tensor
    ) -> torch.Tensor:
        """Override to change where the critic loss counts.

        Args:
            batch: the training batch (torch tensors).
            critic_loss: unmasked critic loss ``(B, T, C, G, 1)``.
            pad_mask: default mask ``(B, T, 1, 1, 1)``, True where the transition is real.

        Returns:
            A boolean mask broadcastable to ``critic_loss``.
        """
        return pad_mask

    def loss_terms(
        self, batch: Batch, states: torch.Tensor, valid: torch.Tensor, metrics: dict[str, float] | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Unmasked actor loss ``(B, T, G, 1)`` and critic loss ``(B, T, C, G, 1)`` (None: critics untrained).

        Runs with autocast off (:func:`amago_nets.precision.full_precision`): the math here is fp32, and a network
        called here computes in the autocast dtype only inside :func:`amago_nets.precision.network_precision`
        (the actor and critic heads do that themselves).

        Args:
            batch: the training batch (torch tensors).
            states: ``(B, L, D)`` trajectory-encoder outputs in fp32 (with gradients).
            valid: ``(B, T)`` transition mask.
            metrics: dict to add logging metrics to, or None when this step does not log.
        """
        raise NotImplementedError

    def forward(self, batch: Batch, log_step: bool = False) -> tuple[torch.Tensor, dict[str, float]]:
        """Same as :meth:`loss`: the training loop calls the agent through its DDP wrapper, which only syncs
        gradients for computations that go through ``forward``."""
        return self.loss(batch, log_step=log_step)

    def loss(self, batch: Batch, log_step: bool = False) -> tuple[torch.Tensor, dict[str, float]]:
        """The learning update's loss on one batch: ``actor + critic_loss_weight · critic``.

        Args:
            batch: a :class:`Batch` of torch tensors on this agent's device.
            log_step: also compute the detailed metrics (Q statistics, filter, policy, PopArt).

        Returns:
            ``(loss, metrics)``: a scalar to backpropagate and AMAGO's ``train/`` metrics (names without the
            panel prefix; the experiment loop adds it).

        Raises:
            NonFiniteLossError: a loss term is NaN or infinite (names the term; only with ``check_finite``).
            ValueError: the batch has fewer than two observations per sequence.
        """
        if batch.seq_len < 2:
            msg = f"{self.config.kind}: a batch needs at least 2 observations per sequence, got L={batch.seq_len}."
            raise ValueError(msg)
        mask = batch.mask.bool()
        valid = mask[:, 1:]
        metrics: dict[str, float] | None = {} if log_step else None
        states, _ = self.get_state_embedding(batch.obs, batch.rl2s, batch.time_idxs, None, pad_mask=~mask)
        # Mixed precision's rule (amago_nets.precision): the encoders above and the heads' networks compute in the
        # autocast dtype; distributions, PopArt, targets, labels and losses compute in fp32.
        with full_precision():
            actor_loss, critic_loss = self.loss_terms(batch, to_full(states), valid, metrics)

            actor_mask = self.edit_actor_mask(batch, actor_loss, valid[..., None, None])
            actor_term = masked_mean(actor_loss, actor_mask)
            if critic_loss is None:
                critic_term = torch.zeros((), device=actor_term.device)
            else:
                critic_mask = self.edit_critic_mask(batch, critic_loss, valid[..., None, None, None])
                critic_term = masked_mean(critic_loss, critic_mask)
            total = actor_term + self.config.critic_loss_weight * critic_term
        if self.config.check_finite:
            self._check_finite(actor_term, critic_term)

        summary = {
            "Loss": float(total.detach()),
            "Actor Loss": float(actor_term.detach()),
            "Critic Loss": float(critic_term.detach()),
            "Sequence Length": float(batch.seq_len),
            "Batch Size (in Timesteps)": float(batch.batch_size * (batch.seq_len - 1)),
            "Unmasked Batch Size (in Timesteps)": float(valid.sum()),
        }
        if metrics is not None:
            summary.update(metrics)
        return total, summary

    def _check_finite(self, actor_term: torch.Tensor, critic_term: torch.Tensor) -> None:
        # One device sync for both checks: stacking first keeps it a single transfer on GPU.
        finite = torch.isfinite(torch.stack((actor_term.detach(), critic_term.detach()))).tolist()
        for ok, name, value in zip(finite, ("actor", "critic"), (actor_term, critic_term), strict=True):
            if not ok:
                msg = (
                    f"{self.config.kind}: the {name} loss is {float(value.detach())}; stopped before it reached the "
                    "parameters, which are still the last finite ones. Lower the learning rate or "
                    "reward_multiplier, or look for extreme rewards in the data."
                )
                raise NonFiniteLossError(msg)

    # ---- shared pieces of the loss ----------------------------------------------------------------------

    def sample_actions(self, policy: Policy, samples: int, reparameterised: bool) -> torch.Tensor:
        """``(K, B, T, G, A)`` actions drawn from ``policy`` in the critics' input format.

        Discrete policies give one-hots (AMAGO's ``DiscreteLikeContinuous``): with ``reparameterised``,
        straight-through Gumbel-softmax samples (one-hot values, gradients of the relaxed sample at
        ``gumbel_temperature``); else plain one-hot samples. Other policies give ``rsample``/``sample`` draws.
        """
        if isinstance(policy, OneHotPolicy):
            if reparameterised:
                temperature = self.config.gumbel_temperature
                return torch.stack([policy.gumbel_rsample(temperature) for _ in range(samples)])
            return torch.stack([policy.sample_one_hot() for _ in range(samples)])
        draw = policy.rsample if reparameterised else policy.sample
        return torch.stack([draw() for _ in range(samples)])

    def buffer_actions(self, batch: Batch) -> torch.Tensor:
        """Buffer actions ``(B, T, A)`` clamped into the policy's range ([0, 1] one-hot/binary, [-1, 1] Box)."""
        actions = batch.actions.float()
        if self.discrete or self.multidiscrete or self.multibinary:
            return actions.clamp(0.0, 1.0)
        return actions.clamp(-1.0, 1.0)

    def add_policy_metrics(self, policy: Policy, valid: torch.Tensor, metrics: dict[str, float]) -> None:
        """Entropy and probability statistics of the rollout gamma's policy (AMAGO's names)."""
        with torch.no_grad():
            entropy = policy.entropy_estimate()[..., -1, 0]  # (B, T)
            if self.discrete:
                probs = policy.probs[..., -1, :]  # type: ignore[attr-defined]
                metrics["Policy Per-timestep Entropy (test-time gamma)"] = float(masked_mean(entropy, valid))
                metrics["Policy Per-timstep Low Prob. (test-time gamma)"] = float(
                    masked_mean(probs.amin(-1), valid)
                )
                metrics["Policy Per-timestep High Prob. (test-time gamma)"] = float(
                    masked_mean(probs.amax(-1), valid)
                )
                metrics["Policy Overall Highest Prob."] = float(probs[valid].amax()) if valid.any() else 0.0
            else:
                metrics["Policy Entropy (test-time gamma)"] = float(masked_mean(entropy, valid))

    def add_filter_metrics(
        self,
        logp: torch.Tensor,
        weights: torch.Tensor,
        advantage: torch.Tensor,
        valid: torch.Tensor,
        metrics: dict[str, float],
    ) -> None:
        """Log-prob, filter and approval statistics over real transitions (AMAGO's names)."""
        with torch.no_grad():
            if not valid.any():
                return
            real_logp, real_w = logp[valid], weights[valid]  # (N, G, 1)
            metrics["Minimum Action Logprob"] = float(real_logp.min())
            metrics["Maximum Action Logprob"] = float(real_logp.max())
            metrics["Mean Action Logprob"] = float(real_logp.mean())
            metrics["Filter Max"] = float(real_w.max())
            metrics["Filter Min"] = float(real_w.min())
            metrics["Filter Mean"] = float(real_w.mean())
            flat_w = real_w.flatten().float()
            metrics["Filter 95th Percentile"] = float(torch.quantile(flat_w, 0.95))
            metrics["Filter 75th Percentile"] = float(torch.quantile(flat_w, 0.75))
            approved = (advantage[valid] > 0).float()  # (N, G, 1)
            metrics["Pct. of Actions Approved by Binary FBC Filter (All Gammas)"] = float(
                approved.mean() * 100
            )
            for index, gamma in enumerate(self.gammas):
                metrics[f"Pct. of Actions Approved by Binary FBC (gamma = {gamma: .3f})"] = float(
                    approved[:, index].mean() * 100
                )

    def add_target_metrics(
        self, batch: Batch, targets: torch.Tensor, valid: torch.Tensor, metrics: dict[str, float]
    ) -> None:
        """TD target, reward, done and PopArt statistics (AMAGO's names)."""
        with torch.no_grad():
            if valid.any():
                real = targets[valid]  # (N, G, 1)
                metrics["Min TD Target"] = float(real.min())
                metrics["Max TD Target"] = float(real.max())
                metrics["TD Target (test-time gamma)"] = float(real[:, -1].mean())
                rewards = batch.rews[..., 0][valid].float()
                metrics["Mean Reward (in training sequences)"] = float(rewards.mean())
                metrics["Min Reward (in training sequences)"] = float(rewards.min())
                metrics["Max Reward (in training sequences)"] = float(rewards.max())
            done_rows = (batch.dones[..., 0].bool() & valid).any(dim=1)
            metrics["Sequences Containing Done"] = float(done_rows.float().mean())
            for name in ("mu", "nu", "w", "b"):
                metrics[f"PopArt {name} (mean over gamma)"] = float(getattr(self.popart, name).mean())
            metrics["PopArt sigma (mean over gamma)"] = float(self.popart.sigma.mean())

    def add_value_metrics(
        self, raw_q: torch.Tensor, normalized_q: torch.Tensor, valid: torch.Tensor, metrics: dict[str, float]
    ) -> None:
        """Per-gamma Q statistics of the buffer actions, ``raw_q``/``normalized_q`` ``(B, T, C, G, 1)``."""
        with torch.no_grad():
            if not valid.any():
                return
            raw, normed = raw_q[valid], normalized_q[valid]  # (N, C, G, 1)
            metrics["Q(s, a) (global std, rescaled, ignoring padding)"] = float(normed.std())
            for index, gamma in enumerate(self.gammas):
                metrics[f"Q(s, a) (global mean, rescaled) gamma={gamma:.3f}"] = float(
                    normed[:, :, index].mean()
                )
                metrics[f"Q(s,a) (global mean, raw scale) gamma={gamma:.3f}"] = float(raw[:, :, index].mean())
                metrics[f"Q(s, a) Ensemble Stdev. (raw scale, ignoring padding) gamma={gamma:.3f}"] = float(
                    raw[:, :, index].std(dim=1).mean()
                )
