"""Policy distributions: what the actor head's output vector means.

A ``PolicyDistribution`` holds no parameters (it is not an ``nn.Module``), so swapping one never breaks a
checkpoint. Called on the head's output ``(..., input_dimension)`` it returns a ``Policy`` over ``(...)``.

Action formats (the replay buffer's): Discrete actions are one-hot vectors ``(..., A)``, MultiBinary actions
0/1 vectors, Box actions floats in [-1, 1] (the env wrapper rescales to the env's bounds). ``Policy.sample``
returns Discrete actions as indices ``(..., 1)`` and everything else in the buffer format.
"""

from __future__ import annotations

import abc
import math

import torch
import torch.nn.functional as F
from gymnasium import spaces

from amago_agents.specs import (
    BetaDistConfig,
    ContinuousDistConfig,
    DiscreteDistConfig,
    GMMDistConfig,
    TanhGaussianDistConfig,
)

ACTION_CLAMP = 0.99
"""The tanh-Gaussian and Beta policies clamp buffer actions to ±0.99 before their log-probability (atanh(±1) and
the Beta density at the bounds are infinite); the mixture policy guards with :data:`TANH_EPSILON` instead."""

_LOG_2 = math.log(2.0)


def _gumbel_max(log_probs: torch.Tensor) -> torch.Tensor:
    """Categorical samples ``(..., 1)`` by the Gumbel-max trick: no device sync, and a NaN input yields an index
    (the loss check reports the NaN) instead of an exception deep inside sampling."""
    gumbel = -torch.empty_like(log_probs).exponential_().log()
    return (log_probs + gumbel).argmax(-1, keepdim=True)


class Policy(abc.ABC):
    """Distribution over actions, batched over every leading dimension (typically (B, L, G))."""

    @abc.abstractmethod
    def sample(self) -> torch.Tensor:
        """A sample without gradient (Discrete: indices ``(..., 1)``; MultiDiscrete: ``(..., D)``; others:
        ``(..., A)``)."""

    def rsample(self) -> torch.Tensor:
        """A reparameterised sample ``(..., A)`` that carries gradients to the distribution's parameters.

        Raises:
            NotImplementedError: the distribution cannot be reparameterised.
        """
        msg = (
            f"{type(self).__name__} has no reparameterised samples; set online_coeff = 0 (no policy gradient) "
            "or choose a reparameterised distribution (tanh_gaussian, beta)."
        )
        raise NotImplementedError(msg)

    @abc.abstractmethod
    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """``log pi(action)`` of buffer-format actions ``(..., A)``, as ``(..., 1)``."""

    @abc.abstractmethod
    def mode(self) -> torch.Tensor:
        """The deterministic action used when rollouts do not sample (format as :meth:`sample`)."""

    @abc.abstractmethod
    def entropy_estimate(self) -> torch.Tensor:
        """Entropy ``(..., 1)``: exact where cheap, else ``-log pi(sample)`` (for logging only)."""


class PolicyDistribution(abc.ABC):
    """Turns an actor head's output into a :class:`Policy`.

    Attributes:
        action_dim: size of the action vector (number of choices for Discrete).
        input_dimension: size of the head output one policy needs.
        is_discrete: actions are one of ``action_dim`` choices.
        actions_differentiable: :meth:`Policy.rsample` works (the policy gradient can be used).
    """

    is_discrete: bool = False
    actions_differentiable: bool = True

    def __init__(self, action_dim: int) -> None:
        self.action_dim = int(action_dim)

    @property
    @abc.abstractmethod
    def input_dimension(self) -> int:
        """Size of the parameter vector of one policy."""

    @abc.abstractmethod
    def __call__(self, params: torch.Tensor) -> Policy:
        """The policy for head outputs ``(..., input_dimension)``."""


# --------------------------------------------------------------------------------------------------------
# Discrete
# --------------------------------------------------------------------------------------------------------


class OneHotPolicy(Policy):
    """A policy over discrete choices whose actions the critics may take as one-hots (AMAGO's
    ``DiscreteLikeContinuous``): plain one-hot samples, and straight-through Gumbel samples for the gradient."""

    @abc.abstractmethod
    def sample_one_hot(self) -> torch.Tensor:
        """One-hot samples ``(..., A)`` without gradient."""

    @abc.abstractmethod
    def gumbel_rsample(self, temperature: float) -> torch.Tensor:
        """Straight-through Gumbel-softmax samples ``(..., A)``: one-hot values, soft gradients."""


class ClippedCategorical(OneHotPolicy):
    """Categorical whose probabilities are clipped to [low, high] and renormalised (AMAGO's ``Discrete``).

    Two normalisations, as AMAGO's: the clipped probabilities are divided by their detached sum, then by their
    own sum with gradient (what ``torch.distributions.Categorical(probs=...)`` does). The values are the same as
    one division; the second keeps the gradient on the simplex. Without it, once the top action's probability
    passes ``clip_high`` its behaviour-cloning gradient is exactly 0 and ``sum_a p_a Q(s, a)`` would depend on a
    constant offset of Q.
    """

    def __init__(
        self, logits: torch.Tensor, clip_low: float, clip_high: float, allowed: torch.Tensor | None = None
    ) -> None:
        if allowed is not None:
            # A padded timestep's mask is all False (its loss is masked out): it allows every action instead,
            # so that no row is left without one.
            allowed = allowed | ~allowed.any(-1, keepdim=True)
            logits = logits.masked_fill(~allowed, float("-inf"))
        clipped = logits.softmax(-1).clamp(clip_low, clip_high)
        if allowed is not None:
            clipped = clipped * allowed  # the clip's floor would give masked actions clip_low again
        safe = clipped / clipped.sum(-1, keepdim=True).detach()
        self.probs = safe / safe.sum(-1, keepdim=True)
        # As Categorical's logits: probabilities clamped to [eps, 1 - eps] before the log, so a probability of
        # exactly 0 or 1 (clip_low = 0 or clip_high = 1) gives a finite log-probability.
        eps = torch.finfo(self.probs.dtype).eps
        self.log_probs = self.probs.clamp(eps, 1.0 - eps).log()
        # What sampling draws from: masked actions at -inf, so that no noise can pick one (log(eps) could lose
        # to an allowed action whose probability is below eps).
        self._draw_logits = (
            self.log_probs if allowed is None else self.log_probs.masked_fill(~allowed, float("-inf"))
        )

    def sample(self) -> torch.Tensor:
        """Indices ``(..., 1)``."""
        return _gumbel_max(self._draw_logits.detach())

    def sample_one_hot(self) -> torch.Tensor:
        """One-hot samples ``(..., A)`` without gradient."""
        return F.one_hot(self.sample().squeeze(-1), self.probs.shape[-1]).to(self.probs.dtype)

    def gumbel_rsample(self, temperature: float) -> torch.Tensor:
        """Straight-through Gumbel-softmax: one-hot forward values, soft gradients (MultiTaskAgent)."""
        return F.gumbel_softmax(self._draw_logits, tau=temperature, hard=True)

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """Log-probability of the choice a buffer one-hot marks (its argmax, so soft inputs are safe too)."""
        return self.log_probs.gather(-1, action.argmax(-1, keepdim=True))

    def mode(self) -> torch.Tensor:
        """Most likely index ``(..., 1)``."""
        return self.probs.argmax(-1, keepdim=True)

    def entropy_estimate(self) -> torch.Tensor:
        """Exact entropy of the clipped distribution."""
        return -(self.probs * self.log_probs).sum(-1, keepdim=True)


class FactoredCategorical(OneHotPolicy):
    """A MultiDiscrete policy: one clipped categorical per dimension, chosen independently given the state.

    Actions in the buffer format are the dimensions' one-hots one after the other (``sum(sizes)`` wide);
    samples and modes are one index per dimension ``(..., D)``.

    Args:
        logits: ``(..., sum(sizes))``, the dimensions' logits one after the other.
        sizes: choices per dimension.
        clip_low: each dimension's probability floor (as :class:`ClippedCategorical`).
        clip_high: each dimension's probability ceiling.
        allowed: an action mask ``(..., sum(sizes))`` (bool), each dimension's entries one after the other.
    """

    def __init__(
        self,
        logits: torch.Tensor,
        sizes: list[int],
        clip_low: float,
        clip_high: float,
        allowed: torch.Tensor | None = None,
    ) -> None:
        self.sizes = sizes
        masks = allowed.split(sizes, -1) if allowed is not None else [None] * len(sizes)
        self.dims = [
            ClippedCategorical(part, clip_low, clip_high, mask)
            for part, mask in zip(logits.split(sizes, -1), masks, strict=True)
        ]
        self.probs = torch.cat([dim.probs for dim in self.dims], -1)
        """Each dimension's probabilities, one after the other (the critics' expected one-hot)."""

    def sample(self) -> torch.Tensor:
        """Indices ``(..., D)``."""
        return torch.cat([dim.sample() for dim in self.dims], -1)

    def sample_one_hot(self) -> torch.Tensor:
        """The dimensions' one-hot samples, one after the other ``(..., sum(sizes))``."""
        return torch.cat([dim.sample_one_hot() for dim in self.dims], -1)

    def gumbel_rsample(self, temperature: float) -> torch.Tensor:
        """Straight-through Gumbel-softmax samples of every dimension, one after the other."""
        return torch.cat([dim.gumbel_rsample(temperature) for dim in self.dims], -1)

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """The sum of the dimensions' log-probabilities of a buffer action (one-hots one after the other)."""
        parts = action.split(self.sizes, -1)
        return torch.stack([dim.log_prob(part) for dim, part in zip(self.dims, parts, strict=True)]).sum(0)

    def mode(self) -> torch.Tensor:
        """Each dimension's most likely index ``(..., D)``."""
        return torch.cat([dim.mode() for dim in self.dims], -1)

    def entropy_estimate(self) -> torch.Tensor:
        """Exact entropy: the sum of the dimensions' (they are independent)."""
        return torch.stack([dim.entropy_estimate() for dim in self.dims]).sum(0)


class OneHotDist(PolicyDistribution):
    """A distribution over discrete choices stored as one-hots (Discrete, MultiDiscrete): it takes an action
    mask and softens buffer one-hots onto the policy's simplex."""

    @abc.abstractmethod
    def __call__(self, params: torch.Tensor, allowed: torch.Tensor | None = None) -> OneHotPolicy:
        """The policy for ``params``; ``allowed`` (bool, broadcastable) keeps it on the allowed actions."""

    @abc.abstractmethod
    def soften_buffer_action(
        self, one_hot: torch.Tensor, allowed: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Buffer one-hots clipped and renormalised onto the policy's simplex (AMAGO's discrete critic input)."""


def _soften(one_hot: torch.Tensor, config: DiscreteDistConfig, allowed: torch.Tensor | None) -> torch.Tensor:
    clipped = one_hot.clamp(config.clip_prob_low, config.clip_prob_high)
    if allowed is not None:
        clipped = clipped * (allowed | ~allowed.any(-1, keepdim=True))
    return clipped / clipped.sum(-1, keepdim=True)


class DiscreteDist(OneHotDist):
    """Clipped categorical policy for Discrete action spaces."""

    is_discrete = True

    def __init__(self, action_dim: int, config: DiscreteDistConfig | None = None) -> None:
        super().__init__(action_dim)
        self.config = config or DiscreteDistConfig()

    @property
    def input_dimension(self) -> int:
        """One logit per choice."""
        return self.action_dim

    def __call__(self, params: torch.Tensor, allowed: torch.Tensor | None = None) -> ClippedCategorical:
        """A clipped categorical over the logits ``params``; ``allowed`` (bool, broadcastable to them) keeps it
        on the actions an env's mask allows (the others get probability 0)."""
        return ClippedCategorical(params, self.config.clip_prob_low, self.config.clip_prob_high, allowed)

    def soften_buffer_action(
        self, one_hot: torch.Tensor, allowed: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Clips and renormalises buffer one-hots so they live on the same simplex as the policy's probabilities
        (AMAGO feeds these to the discrete critic); with ``allowed``, on the allowed actions only."""
        return _soften(one_hot, self.config, allowed)


class MultiDiscreteDist(OneHotDist):
    """A factored policy for MultiDiscrete action spaces: one clipped categorical per dimension (the discrete
    policy's clip settings), for critics that take the one-hots as input."""

    def __init__(self, sizes: list[int], config: DiscreteDistConfig | None = None) -> None:
        super().__init__(sum(sizes))
        self.sizes = [int(size) for size in sizes]
        self.config = config or DiscreteDistConfig()

    @property
    def input_dimension(self) -> int:
        """One logit per choice of every dimension."""
        return self.action_dim

    def __call__(self, params: torch.Tensor, allowed: torch.Tensor | None = None) -> FactoredCategorical:
        """One clipped categorical per dimension over its slice of ``params``."""
        return FactoredCategorical(
            params, self.sizes, self.config.clip_prob_low, self.config.clip_prob_high, allowed
        )

    def soften_buffer_action(
        self, one_hot: torch.Tensor, allowed: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Each dimension's one-hot clipped and renormalised on its own simplex."""
        parts = one_hot.split(self.sizes, -1)
        masks = allowed.split(self.sizes, -1) if allowed is not None else [None] * len(self.sizes)
        return torch.cat(
            [_soften(part, self.config, mask) for part, mask in zip(parts, masks, strict=True)], -1
        )


# --------------------------------------------------------------------------------------------------------
# Continuous
# --------------------------------------------------------------------------------------------------------


def _tanh_log_det(pre_tanh: torch.Tensor) -> torch.Tensor:
    """log |d tanh(u) / du| = log(1 - tanh(u)^2) at ``u = pre_tanh``, per dimension, in the form that stays
    exact where tanh saturates: ``2 (log 2 - u - softplus(-2u))``."""
    return 2.0 * (_LOG_2 - pre_tanh - F.softplus(-2.0 * pre_tanh))


TANH_EPSILON = 1e-6
"""The tanh-wrapped mixture's guard (robomimic's, which AMAGO's GMM uses): ``1 ± a`` is kept above it before the
inverse, and it is added inside ``log(1 - a^2 + eps)``, so actions at the bounds have a finite log-probability."""


def _normal_log_prob(x: torch.Tensor, loc: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    return -0.5 * ((x - loc) / std).pow(2) - std.log() - 0.5 * math.log(2 * math.pi)


class TanhGaussian(Policy):
    """``tanh(Normal(loc, std))`` per dimension."""

    def __init__(self, loc: torch.Tensor, std: torch.Tensor) -> None:
        self.loc, self.std = loc, std

    def rsample(self) -> torch.Tensor:
        """``tanh(loc + std · eps)``."""
        return torch.tanh(self.loc + self.std * torch.randn_like(self.loc))

    def sample(self) -> torch.Tensor:
        """A sample without gradient."""
        with torch.no_grad():
            return self.rsample()

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """Summed over action dimensions; actions clamped to ±0.99 before atanh."""
        pre_tanh = torch.atanh(action.clamp(-ACTION_CLAMP, ACTION_CLAMP))
        per_dim = _normal_log_prob(pre_tanh, self.loc, self.std) - _tanh_log_det(pre_tanh)
        return per_dim.sum(-1, keepdim=True)

    def mode(self) -> torch.Tensor:
        """``tanh(loc)``."""
        return torch.tanh(self.loc)

    def entropy_estimate(self) -> torch.Tensor:
        """``-log pi(sample)``."""
        return -self.log_prob(self.sample())


class TanhGaussianDist(PolicyDistribution):
    """Tanh-squashed diagonal Gaussian with a bounded standard deviation."""

    def __init__(self, action_dim: int, config: TanhGaussianDistConfig | None = None) -> None:
        super().__init__(action_dim)
        self.config = config or TanhGaussianDistConfig()
        self._log_low = math.log(self.config.std_low)
        self._log_high = math.log(self.config.std_high)

    @property
    def input_dimension(self) -> int:
        """Mean and raw std per dimension."""
        return 2 * self.action_dim

    def __call__(self, params: torch.Tensor) -> TanhGaussian:
        """Splits ``params`` into mean and raw std; tanh maps the raw std into [log std_low, log std_high]."""
        loc, raw_std = params.chunk(2, dim=-1)
        log_std = self._log_low + 0.5 * (self._log_high - self._log_low) * (torch.tanh(raw_std) + 1.0)
        return TanhGaussian(loc, log_std.exp())


class TanhGMM(Policy):
    """Mixture of diagonal Gaussians, squashed by tanh."""

    def __init__(self, logits: torch.Tensor, loc: torch.Tensor, std: torch.Tensor) -> None:
        # logits (..., M); loc and std (..., M, A)
        self.logits, self.loc, self.std = logits, loc, std

    def sample(self) -> torch.Tensor:
        """Picks a component, then samples it (no gradient: mixtures are not reparameterised here)."""
        with torch.no_grad():
            component = _gumbel_max(self.logits.log_softmax(-1)).unsqueeze(-1)
            index = component.expand(*self.logits.shape[:-1], 1, self.loc.shape[-1])
            loc = self.loc.gather(-2, index).squeeze(-2)
            std = self.std.gather(-2, index).squeeze(-2)
            return torch.tanh(loc + std * torch.randn_like(loc))

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """Mixture log-density of the pre-tanh action, minus the tanh log-determinant.

        Actions are not clamped to ±0.99 (unlike the single Gaussian): ``1 ± a`` is kept above
        :data:`TANH_EPSILON`, as AMAGO's GMM does, so an action at the bound (offline data often has them) gets the
        low density it has rather than the density at 0.99.
        """
        one_plus = (1.0 + action).clamp_min(TANH_EPSILON)
        one_minus = (1.0 - action).clamp_min(TANH_EPSILON)
        pre_tanh = (0.5 * torch.log(one_plus / one_minus)).unsqueeze(-2)
        per_component = _normal_log_prob(pre_tanh, self.loc, self.std).sum(-1)
        mixed = torch.logsumexp(per_component + self.logits.log_softmax(-1), dim=-1, keepdim=True)
        log_det = torch.log(1.0 - action.pow(2) + TANH_EPSILON)
        return mixed - log_det.sum(-1, keepdim=True)

    def mode(self) -> torch.Tensor:
        """``tanh`` of the mean of the most likely component."""
        component = self.logits.argmax(-1, keepdim=True).unsqueeze(-1)
        index = component.expand(*self.logits.shape[:-1], 1, self.loc.shape[-1])
        return torch.tanh(self.loc.gather(-2, index).squeeze(-2))

    def entropy_estimate(self) -> torch.Tensor:
        """``-log pi(sample)``."""
        return -self.log_prob(self.sample())


class GMMDist(PolicyDistribution):
    """Tanh-squashed Gaussian mixture; expressive, but without reparameterised samples (no policy gradient)."""

    actions_differentiable = False

    def __init__(self, action_dim: int, config: GMMDistConfig | None = None) -> None:
        super().__init__(action_dim)
        self.config = config or GMMDistConfig()

    @property
    def input_dimension(self) -> int:
        """Means and raw stds of every component, plus one logit per component."""
        return 2 * self.config.modes * self.action_dim + self.config.modes

    def __call__(self, params: torch.Tensor) -> TanhGMM:
        """Splits ``params`` into component means, stds (softplus + std_low) and mixture logits."""
        modes, dim = self.config.modes, self.action_dim
        lead = params.shape[:-1]
        loc = params[..., : modes * dim].reshape(*lead, modes, dim)
        raw_std = params[..., modes * dim : 2 * modes * dim].reshape(*lead, modes, dim)
        logits = params[..., 2 * modes * dim :]
        return TanhGMM(logits, loc, F.softplus(raw_std) + self.config.std_low)


class ShiftedBeta(Policy):
    """``2 · Beta(alpha, beta) - 1`` per dimension."""

    def __init__(self, alpha: torch.Tensor, beta: torch.Tensor) -> None:
        self.dist = torch.distributions.Beta(alpha, beta, validate_args=False)

    def rsample(self) -> torch.Tensor:
        """Reparameterised sample in [-1, 1]."""
        return 2.0 * self.dist.rsample() - 1.0

    def sample(self) -> torch.Tensor:
        """A sample without gradient."""
        return 2.0 * self.dist.sample() - 1.0

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """Summed over dimensions; actions clamped to ±0.99 (the density is 0 or infinite at the edges)."""
        unit = (action.clamp(-ACTION_CLAMP, ACTION_CLAMP) + 1.0) / 2.0
        return (self.dist.log_prob(unit) - _LOG_2).sum(-1, keepdim=True)

    def mode(self) -> torch.Tensor:
        """The mean, mapped to [-1, 1] (as AMAGO's deterministic Beta action)."""
        return 2.0 * self.dist.mean - 1.0

    def entropy_estimate(self) -> torch.Tensor:
        """Exact entropy of the shifted Beta."""
        return (self.dist.entropy() + _LOG_2).sum(-1, keepdim=True)


class BetaDist(PolicyDistribution):
    """Beta policy on [-1, 1] with alpha, beta = softplus + 1.0001 (unimodal)."""

    def __init__(self, action_dim: int, config: BetaDistConfig | None = None) -> None:
        super().__init__(action_dim)
        self.config = config or BetaDistConfig()

    @property
    def input_dimension(self) -> int:
        """Raw alpha and beta per dimension."""
        return 2 * self.action_dim

    def __call__(self, params: torch.Tensor) -> ShiftedBeta:
        """Splits ``params`` into alpha and beta (each softplus + 1.0001)."""
        raw_alpha, raw_beta = params.chunk(2, dim=-1)
        return ShiftedBeta(F.softplus(raw_alpha) + 1.0001, F.softplus(raw_beta) + 1.0001)


# --------------------------------------------------------------------------------------------------------
# MultiBinary
# --------------------------------------------------------------------------------------------------------


class IndependentBernoulli(Policy):
    """One Bernoulli per action dimension."""

    def __init__(self, logits: torch.Tensor) -> None:
        self.logits = logits

    def sample(self) -> torch.Tensor:
        """0/1 floats ``(..., A)``."""
        return torch.bernoulli(torch.sigmoid(self.logits.detach()))

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """Mean (not sum) over dimensions, as AMAGO, so the BC scale does not grow with the action size."""
        target = (action > 0.5).to(self.logits.dtype)
        per_dim = -F.binary_cross_entropy_with_logits(self.logits, target, reduction="none")
        return per_dim.mean(-1, keepdim=True)

    def mode(self) -> torch.Tensor:
        """1 where the probability exceeds 0.5."""
        return (self.logits > 0).to(self.logits.dtype)

    def entropy_estimate(self) -> torch.Tensor:
        """Exact entropy, mean over dimensions."""
        p = torch.sigmoid(self.logits)
        per_dim = F.binary_cross_entropy_with_logits(self.logits, p, reduction="none")
        return per_dim.mean(-1, keepdim=True)


class MultibinaryDist(PolicyDistribution):
    """Independent Bernoullis for MultiBinary action spaces (not reparameterised: no policy gradient)."""

    actions_differentiable = False

    @property
    def input_dimension(self) -> int:
        """One logit per dimension."""
        return self.action_dim

    def __call__(self, params: torch.Tensor) -> IndependentBernoulli:
        """Bernoullis with logits ``params``."""
        return IndependentBernoulli(params)


# --------------------------------------------------------------------------------------------------------
# Choice by action space
# --------------------------------------------------------------------------------------------------------


def action_dim_of(action_space: spaces.Space) -> int:
    """Size of the buffer action vector: choices for Discrete, dimensions for MultiBinary and Box.

    Raises:
        ValueError: the space is not Discrete, MultiBinary (1-d) or Box (1-d).
    """
    if isinstance(action_space, spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, spaces.MultiDiscrete) and len(action_space.shape) == 1:
        return int(action_space.nvec.sum())
    if isinstance(action_space, spaces.MultiBinary) and len(action_space.shape) == 1:
        return int(action_space.shape[0])
    if isinstance(action_space, spaces.Box) and len(action_space.shape) == 1:
        return int(action_space.shape[0])
    msg = (
        f"agents support Discrete, 1-d MultiDiscrete, 1-d MultiBinary and 1-d Box action spaces, got "
        f"{action_space!r}; "
        "flatten the action space with a gymnasium wrapper."
    )
    raise ValueError(msg)


def make_policy_distribution(
    action_space: spaces.Space, discrete: DiscreteDistConfig, continuous: ContinuousDistConfig
) -> PolicyDistribution:
    """The distribution for ``action_space``: ``discrete`` for Discrete (and, per dimension, MultiDiscrete),
    Bernoullis for MultiBinary, else ``continuous``."""
    action_dim = action_dim_of(action_space)
    if isinstance(action_space, spaces.Discrete):
        return DiscreteDist(action_dim, discrete)
    if isinstance(action_space, spaces.MultiDiscrete):
        return MultiDiscreteDist([int(size) for size in action_space.nvec], discrete)
    if isinstance(action_space, spaces.MultiBinary):
        return MultibinaryDist(action_dim)
    if isinstance(continuous, TanhGaussianDistConfig):
        return TanhGaussianDist(action_dim, continuous)
    if isinstance(continuous, GMMDistConfig):
        return GMMDist(action_dim, continuous)
    return BetaDist(action_dim, continuous)
