"""Torch-free specs and configs of amago-agents' ``agent`` and ``multitask`` learning updates.

Entry points (group ``amago.agents``) name the ``ComponentSpec`` objects below. Listing them imports pydantic
and amago_core only; the factories (and torch) are imported when an agent is built.

Both factories are called as::

    Agent(config, *, obs_space, rl2_space, action_space, max_seq_len, tstep_encoder, traj_encoder)

where ``tstep_encoder`` / ``traj_encoder`` are builders: callables that make the encoder from its inferred
context (the experiment hands down each slot resolved once; by hand, ``registries().traj_encoders.builder("rnn")``
or a class). The agent never looks a name up itself, so every installed encoder works with it.
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from amago_core.config.component import ComponentConfig
from amago_core.config.strict import StrictModel
from amago_core.plugins.spec import ComponentSpec

AGENT_GROUP = "amago.agents"

Activation = Literal["leaky_relu", "relu", "gelu", "mish", "silu", "adaptive"]
"""Activations the heads accept (the same names as amago-nets)."""

Norm = Literal["none", "layer", "rmsnorm", "unitball", "hypersphere", "simnorm"]
"""Normalisations the residual actor accepts (the same names as amago-nets)."""

AGENT_CONTEXT: tuple[str, ...] = (
    "obs_space",
    "rl2_space",
    "action_space",
    "max_seq_len",
    "tstep_encoder",
    "traj_encoder",
)
"""Keyword context every agent factory receives from the builder (see the module docstring)."""

DEFAULT_MULTIGAMMAS: tuple[float, ...] = (0.1, 0.9, 0.95, 0.97, 0.99, 0.995)
"""AMAGO's extra discount factors, learned alongside the rollout ``gamma``."""


# --------------------------------------------------------------------------------------------------------
# Advantage filters for filtered behaviour cloning
# --------------------------------------------------------------------------------------------------------


class BinaryFilterConfig(StrictModel):
    """``f(A) = 1[A > threshold]``: imitate only actions the critic thinks beat the policy (CRR-binary)."""

    type: Literal["binary"] = "binary"
    """Filter name."""
    threshold: float = 0.0
    """Advantage above which a buffer action is imitated."""


class ExpFilterConfig(StrictModel):
    """``f(A) = clip(exp(beta · clip(A, adv_low, adv_high)), weight_low, weight_high)`` (AWAC / CRR-exp)."""

    type: Literal["exp"] = "exp"
    """Filter name."""
    beta: float = 1.0
    """Inverse temperature: larger values favour high-advantage actions more sharply."""
    adv_clip_low: float | None = None
    """Lower clip of the advantage before exponentiating (None: no clip)."""
    adv_clip_high: float | None = None
    """Upper clip of the advantage before exponentiating (None: no clip)."""
    weight_clip_low: float | None = 1e-7
    """Lower clip of the weight (None: no clip)."""
    weight_clip_high: float | None = None
    """Upper clip of the weight (None: no clip; exp can overflow on large advantages)."""


class LeakyReluFilterConfig(StrictModel):
    """``f(A) = clip(bias + leaky_relu((A - tau) / beta, negative_slope), clip_low, clip_high)``,
    with ``bias`` chosen so that ``f(0)`` is about ``target_f0``, plus ``1[A > 0]`` when ``add_binary``."""

    type: Literal["leaky_relu"] = "leaky_relu"
    """Filter name."""
    beta: float = 2.0
    """Advantage scale: the weight grows by 1 per ``beta`` of advantage above ``tau``."""
    tau: float = 1e-2
    """Advantage where the slope changes from ``negative_slope`` to 1."""
    negative_slope: float = 0.05
    """Slope below ``tau`` (keeps a small imitation weight on poor actions)."""
    target_f0: float = 1e-2
    """Weight given to a zero advantage."""
    clip_low: float = 1e-7
    """Smallest weight."""
    clip_high: float = 10.0
    """Largest weight (before ``add_binary``)."""
    add_binary: bool = True
    """Add the binary filter's 0/1 on top, so positive-advantage actions always get weight above 1."""

    @model_validator(mode="after")
    def _check_beta(self) -> LeakyReluFilterConfig:
        if self.beta <= 0:
            msg = f"leaky_relu filter: beta must be positive, got {self.beta}."
            raise ValueError(msg)
        return self


FilterConfig = Annotated[
    BinaryFilterConfig | ExpFilterConfig | LeakyReluFilterConfig, Field(discriminator="type")
]
"""One of the filters, chosen by ``type``."""


# --------------------------------------------------------------------------------------------------------
# Policy distributions
# --------------------------------------------------------------------------------------------------------


class DiscreteDistConfig(StrictModel):
    """Categorical policy for Discrete action spaces, with AMAGO's probability clipping."""

    type: Literal["discrete"] = "discrete"
    """Distribution name."""
    clip_prob_low: float = 0.001
    """Probabilities are clipped to at least this value, then renormalised (keeps log-probs finite)."""
    clip_prob_high: float = 0.99
    """Probabilities are clipped to at most this value, then renormalised (keeps some exploration)."""

    @model_validator(mode="after")
    def _check_clip(self) -> DiscreteDistConfig:
        if not 0.0 <= self.clip_prob_low < self.clip_prob_high <= 1.0:
            msg = (
                "discrete policy: need 0 <= clip_prob_low < clip_prob_high <= 1, got "
                f"{self.clip_prob_low}, {self.clip_prob_high}."
            )
            raise ValueError(msg)
        return self


class TanhGaussianDistConfig(StrictModel):
    """Diagonal Gaussian squashed by tanh into [-1, 1] (reparameterised: supports the policy gradient)."""

    type: Literal["tanh_gaussian"] = "tanh_gaussian"
    """Distribution name."""
    std_low: float = 0.006737946999085467
    """Smallest standard deviation (AMAGO: e^-5)."""
    std_high: float = 7.38905609893065
    """Largest standard deviation (AMAGO: e^2)."""


class GMMDistConfig(StrictModel):
    """Mixture of tanh-squashed diagonal Gaussians (multi-modal; not reparameterised, so no policy gradient)."""

    type: Literal["gmm"] = "gmm"
    """Distribution name."""
    modes: int = 5
    """Number of mixture components."""
    std_low: float = 1e-4
    """Added to softplus(raw std) so no component collapses."""

    @model_validator(mode="after")
    def _check_modes(self) -> GMMDistConfig:
        if self.modes < 1:
            msg = f"gmm policy: modes must be at least 1, got {self.modes}."
            raise ValueError(msg)
        return self


class BetaDistConfig(StrictModel):
    """Beta distribution on [0, 1] mapped to [-1, 1]; alpha, beta > 1 keep it unimodal."""

    type: Literal["beta"] = "beta"
    """Distribution name."""


ContinuousDistConfig = Annotated[
    TanhGaussianDistConfig | GMMDistConfig | BetaDistConfig, Field(discriminator="type")
]
"""The policy distribution used for Box action spaces, chosen by ``type``."""


# --------------------------------------------------------------------------------------------------------
# Heads
# --------------------------------------------------------------------------------------------------------


class ActorHeadConfig(StrictModel):
    """The actor head: maps each state embedding to one policy per discount factor."""

    type: Literal["plain", "residual"] = "plain"
    """``plain``: an MLP; ``residual``: BRO-style residual blocks (wider, better for large datasets)."""
    n_layers: int = 2
    """Hidden layers of the ``plain`` MLP."""
    d_hidden: int = 256
    """Width of the ``plain`` MLP."""
    feature_dim: int = 256
    """Width of the residual stream (``residual`` only)."""
    residual_ff_dim: int = 512
    """Hidden width inside each residual block (``residual`` only)."""
    residual_blocks: int = 2
    """Number of residual blocks (``residual`` only)."""
    norm: Norm = "layer"
    """Normalisation inside the residual blocks (``residual`` only)."""
    activation: Activation = "leaky_relu"
    """Activation between layers."""
    dropout: float = 0.0
    """Dropout between layers."""

    @model_validator(mode="after")
    def _check_sizes(self) -> ActorHeadConfig:
        if (
            min(self.n_layers, self.d_hidden, self.feature_dim, self.residual_ff_dim) < 1
            or self.residual_blocks < 0
        ):
            msg = "actor head: n_layers, d_hidden, feature_dim and residual_ff_dim must be at least 1."
            raise ValueError(msg)
        return self


class CriticHeadConfig(StrictModel):
    """The critic ensemble: ``num_critics`` independent MLPs evaluated in one batched matmul per layer."""

    n_layers: int = 2
    """Hidden layers of each critic."""
    d_hidden: int = 256
    """Width of each critic."""
    activation: Activation = "leaky_relu"
    """Activation between layers."""
    dropout: float = 0.0
    """Dropout between layers."""
    init: Literal["amago", "linear"] = "amago"
    """How each critic's layers start: ``amago`` as AMAGO's einsum ensembles (weights U(±sqrt(3 / fan_in)) over
    the whole [state, gamma, action] input, biases U(±sqrt(1 / fan_in))); ``linear`` as ``nn.Linear``'s default
    per member and per input part (weights and biases U(±1 / sqrt(d_in)), sqrt(3) narrower)."""

    @model_validator(mode="after")
    def _check_sizes(self) -> CriticHeadConfig:
        if self.n_layers < 1 or self.d_hidden < 1:
            msg = "critic head: n_layers and d_hidden must be at least 1."
            raise ValueError(msg)
        return self


class PopArtConfig(StrictModel):
    """PopArt: per-gamma running statistics of the TD targets; the critic regresses normalised values."""

    enabled: bool = True
    """Normalise the critic regression (off: the layer is the identity)."""
    beta: float = 5e-4
    """Step size of the running mean and second moment (bias-corrected)."""
    init_nu: float = 100.0
    """Initial second moment (a large value keeps the first normalised targets small)."""


# --------------------------------------------------------------------------------------------------------
# Agents
# --------------------------------------------------------------------------------------------------------


class _AgentOptions(ComponentConfig):
    """Options both learning updates share (AMAGO's hyperparameter names and defaults)."""

    inferred_context: ClassVar[tuple[str, ...]] = AGENT_CONTEXT

    num_critics: int = 4
    """Size of the critic ensemble."""
    num_critics_td: int = 2
    """Critics drawn at random (with replacement, per timestep and gamma) to reduce the TD target (REDQ)."""
    online_coeff: float = 1.0
    """Weight of the policy-gradient term -Q(s, a ~ pi) (needs a reparameterised policy)."""
    offline_coeff: float = 0.1
    """Weight of filtered behaviour cloning -f(A) log pi(a_buffer | s)."""
    critic_loss_weight: float = 10.0
    """Total loss = actor loss + critic_loss_weight × critic loss."""
    gamma: float = 0.999
    """Discount factor of the policy that acts (always the last gamma)."""
    multigammas: tuple[float, ...] = DEFAULT_MULTIGAMMAS
    """Extra discount factors learned alongside ``gamma`` (a cheap auxiliary task)."""
    use_multigamma: bool = True
    """Learn the ``multigammas`` too (off: only ``gamma``)."""
    reward_multiplier: float = 10.0
    """Rewards are multiplied by this in the loss only (returns in critic units include it)."""
    tau: float = 0.003
    """Polyak rate of the target networks per optimiser update."""
    fake_filter: bool = False
    """Filter weight fixed to 1: plain behaviour cloning (with ``online_coeff = 0`` the critics are not trained)."""
    num_actions_for_value_in_critic_loss: int = 1
    """Policy samples averaged for the TD target's next-state value (discrete actions in ``agent``: the exact
    expectation instead, unless ``discrete_like_continuous``)."""
    num_actions_for_value_in_actor_loss: int = 1
    """Policy samples averaged for V(s) and the policy gradient (discrete actions in ``agent``: the exact
    expectation instead, unless ``discrete_like_continuous``)."""
    n_step: int = 1
    """n-step TD targets (stop early at a terminal or at the end of the real data)."""
    use_target_actor: bool = True
    """Sample next actions from the target actor (off: from the online actor)."""
    fbc_filter: FilterConfig = BinaryFilterConfig()
    """Advantage filter of the behaviour-cloning term, chosen by ``type`` (binary, exp, leaky_relu)."""
    actor: ActorHeadConfig = ActorHeadConfig()
    """Actor head."""
    critic: CriticHeadConfig = CriticHeadConfig()
    """Critic ensemble head."""
    discrete_dist: DiscreteDistConfig = DiscreteDistConfig()
    """Policy distribution for Discrete action spaces."""
    continuous_dist: ContinuousDistConfig = TanhGaussianDistConfig()
    """Policy distribution for Box action spaces (MultiBinary spaces always use independent Bernoullis)."""
    popart: PopArtConfig = PopArtConfig()
    """Value normalisation."""
    check_finite: bool = True
    """Raise an error naming the loss term as soon as a loss is NaN or infinite (costs one device sync)."""
    discrete_like_continuous: bool = False
    """Discrete action spaces only: treat actions like continuous ones (AMAGO's ``DiscreteLikeContinuous``). The
    critics take one-hot actions as an input and output one value, V(s) and the TD target's next value average
    ``num_actions_for_value_in_*`` sampled one-hots, and the policy gradient goes through straight-through
    Gumbel-softmax samples (``gumbel_temperature``). Off (``agent``): one critic output per action, and the
    expectations over the policy are exact (AMAGO's ``Agent``)."""
    gumbel_temperature: float = 0.5
    """Temperature of the straight-through Gumbel-softmax samples of discrete actions treated like continuous
    ones (AMAGO's ``DiscreteLikeContinuous.gumbel_softmax_temperature``)."""

    @model_validator(mode="after")
    def _check_agent(self) -> _AgentOptions:
        problems = []
        if self.num_critics < 1:
            problems.append(f"num_critics must be at least 1 (got {self.num_critics})")
        if not 1 <= self.num_critics_td <= self.num_critics:
            problems.append(
                f"num_critics_td must lie in [1, num_critics={self.num_critics}] (got {self.num_critics_td})"
            )
        for name in ("num_actions_for_value_in_critic_loss", "num_actions_for_value_in_actor_loss", "n_step"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1 (got {getattr(self, name)})")
        for g in (*self.multigammas, self.gamma):
            if not 0.0 <= g < 1.0:
                problems.append(f"every discount factor must lie in [0, 1) (got {g})")
                break
        if self.online_coeff < 0 or self.offline_coeff < 0:
            problems.append("online_coeff and offline_coeff must be non-negative")
        if not 0.0 <= self.tau <= 1.0:
            problems.append(f"tau must lie in [0, 1] (got {self.tau})")
        if not self.gumbel_temperature > 0:
            problems.append(f"gumbel_temperature must be positive (got {self.gumbel_temperature})")
        if problems:
            msg = f"{self.kind}: " + "; ".join(problems) + "."
            raise ValueError(msg)
        return self

    @property
    def gammas(self) -> tuple[float, ...]:
        """Every learned discount factor; the last one is the rollout ``gamma``."""
        return (*(self.multigammas if self.use_multigamma else ()), self.gamma)


class AgentConfig(_AgentOptions):
    """Off-policy actor-critic (AMAGO's ``Agent``): PopArt-normalised critic ensemble, policy gradient on a
    one-update-stale critic copy plus filtered behaviour cloning, for every discount factor at once."""

    kind: Literal["agent"] = "agent"
    """Registered name of this agent."""


class MultiTaskAgentConfig(_AgentOptions):
    """AMAGO-2's ``MultiTaskAgent``: two-hot classification critics over symlog bins and filtered behaviour
    cloning without the policy gradient, robust to returns of very different scales across tasks."""

    kind: Literal["multitask"] = "multitask"
    """Registered name of this agent."""
    online_coeff: float = 0.0
    """Weight of the policy-gradient term (0: off, as in AMAGO-2; it scales with |Q|)."""
    offline_coeff: float = 1.0
    """Weight of filtered behaviour cloning."""
    num_actions_for_value_in_actor_loss: int = 3
    """Policy samples averaged for V(s) in the advantage (and for the policy gradient when on)."""
    min_return: float | None = None
    """Smallest return the bins cover, in reward-multiplied units (None: -100,000 with a warning)."""
    max_return: float | None = None
    """Largest return the bins cover, in reward-multiplied units (None: 100,000 with a warning)."""
    output_bins: int = 128
    """Number of value bins."""
    use_symlog: bool = True
    """Bins uniform in symlog space (off: uniform in raw return units)."""
    label_type: Literal["twohot", "hlgauss"] = "twohot"
    """Classification labels: ``twohot`` (mass split between the two nearest bins) or ``hlgauss`` (a Gaussian
    integrated over the bins)."""
    hlgauss_sigma: float = 0.75
    """Standard deviation of the ``hlgauss`` labels, in bin widths."""
    critic_init_value: float | None = None
    """Start the critics predicting about this return (reward-multiplied units, inside [min_return,
    max_return]): their output biases become a Gaussian bump over the bins, standard deviation 4 bins, centred on
    it (AMAGO's ``NCriticsTwoHot(init_value=...)``). Within 12 bins of an edge the bump is cut off and the first
    predictions lean inward (a warning says so). None: the usual random initialisation."""
    discrete_like_continuous: bool = True
    """Always on here, as in AMAGO's ``MultiTaskAgent``: the two-hot critics take the action as an input, so
    discrete actions reach them as one-hots (see the ``agent`` option of the same name)."""

    @model_validator(mode="after")
    def _check_bins(self) -> MultiTaskAgentConfig:
        low, high = self.return_range
        if not low < high:
            msg = f"multitask: min_return ({low}) must be below max_return ({high})."
            raise ValueError(msg)
        if self.output_bins < 2:
            msg = f"multitask: output_bins must be at least 2, got {self.output_bins}."
            raise ValueError(msg)
        value = self.critic_init_value
        if value is not None and not (math.isfinite(value) and low <= value <= high):
            msg = (
                f"multitask: critic_init_value={value} is outside the bins' support [{low}, {high}] "
                "(min_return, max_return); choose a value inside it or widen the range."
            )
            raise ValueError(msg)
        if not self.discrete_like_continuous:
            msg = (
                "multitask: discrete_like_continuous cannot be false: the two-hot critics take the action as an "
                "input, so discrete actions are always one-hots (as in AMAGO's MultiTaskAgent); remove the option, "
                "or use kind agent for one critic output per action."
            )
            raise ValueError(msg)
        return self

    @property
    def return_range(self) -> tuple[float, float]:
        """``(min_return, max_return)`` with AMAGO's ±100,000 standing in for an unset bound."""
        low = -100_000.0 if self.min_return is None else self.min_return
        high = 100_000.0 if self.max_return is None else self.max_return
        return low, high


AGENT = ComponentSpec(
    name="agent",
    group_default=True,  # what a run uses when it names none of this group (AMAGO's default)
    group=AGENT_GROUP,
    summary="Off-policy actor-critic: multi-gamma critic ensemble with PopArt, policy gradient + filtered BC.",
    config=AgentConfig,
    factory="amago_agents.agent:Agent",
)

MULTITASK = ComponentSpec(
    name="multitask",
    group=AGENT_GROUP,
    summary="Two-hot classification critics and filtered BC, for returns of different scales across tasks.",
    config=MultiTaskAgentConfig,
    factory="amago_agents.multitask:MultiTaskAgent",
)
