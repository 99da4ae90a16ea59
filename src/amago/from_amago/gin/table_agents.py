"""The gin mapping, second half: AMAGO's agents, their heads and policies, exploration and the Atari env.

Every ``@gin.configurable`` of ``amago.agent``, ``amago.nets.actor_critic``, ``amago.nets.policy_dists``,
``amago.envs.exploration`` and ``amago.envs.builtin``, with each parameter's amago counterpart; :mod:`.mapping`
joins the two halves.
"""

from __future__ import annotations

from amago.from_amago.gin.model import (
    OBS_SPACE,
    RL2_SPACE,
    GinConfigurable,
    Row,
    by_run,
    choice,
    make_configurable,
    no_counterpart,
    same_names,
    setting,
)

_STATE_DIM = by_run("state_dim", "the trajectory encoder's output width, passed by the agent.")
_ACTION_DIM = by_run("action_dim", "the size of the action space, passed by the agent.")
_DISCRETE = by_run("discrete", "whether the action space is discrete, passed by the agent.")
_GAMMAS = by_run(
    "gammas", "the agent's discount factors (`agent.gamma` and `agent.multigammas`), passed by the agent."
)
_D_ACTION = by_run("d_action", "the size of the action space, passed by the actor head.")
_ADV = by_run("adv", "the advantage estimates, passed by the agent at each update.")
_ENV = by_run("amago_env", "the env it wraps, passed by the experiment.")


_AGENT_CONTEXT = (
    "obs_space",
    "rl2_space",
    "action_space",
    "max_seq_len",
    "tstep_encoder_type",
    "traj_encoder_type",
)
_MULTITASK_CONTEXT = (
    "obs_space",
    "rl2_space",
    "action_space",
    "tstep_encoder_type",
    "traj_encoder_type",
    "max_seq_len",
)


def _agent_rows(agent: str, first: tuple[str, ...]) -> list[Row]:
    """The parameters ``Agent`` and ``MultiTaskAgent`` share (``agent`` names the class, for notes), the first
    six in the order ``first`` gives (the two classes order them differently)."""
    rows = [
        OBS_SPACE,
        RL2_SPACE,
        by_run("action_space", "the env's action space, passed by the experiment."),
        by_run("max_seq_len", "`run.max_seq_len`, passed by the experiment."),
        by_run(
            "tstep_encoder_type",
            "the experiment passes its own (`Experiment.tstep_encoder_type`): the `tstep_encoder` slot.",
        ),
        by_run(
            "traj_encoder_type",
            "the experiment passes its own (`Experiment.traj_encoder_type`): the `traj_encoder` slot.",
        ),
        *same_names(
            "num_critics num_critics_td online_coeff offline_coeff critic_loss_weight gamma reward_multiplier tau fake_filter num_actions_for_value_in_critic_loss num_actions_for_value_in_actor_loss"
        ),
        choice("fbc_filter_func", "fbc_filter.type", "binary_filter exp_filter leaky_relu_filter"),
        setting("popart", "popart.enabled"),
        *same_names("use_target_actor use_multigamma n_step"),
        choice("actor_type", "actor.type", "Actor ResidualActor"),
        choice(
            "critic_type",
            "agent.kind",
            "NCritics NCriticsTwoHot",
            note=f"the critic comes with the agent in amago: `NCritics` with `agent`, `NCriticsTwoHot` with "
            f"`multitask`, so `{agent}.critic_type` has nothing else to pick.",
        ),
        no_counterpart(
            "pass_obs_keys_to_actor",
            "amago's actor heads see only the trajectory encoder's output; AMAGO's use for it, masking actions, is "
            "`AMAGOEnv(env, action_mask_key=...)`, which keeps the policy on the allowed actions.",
            None,
        ),
    ]
    by_name = {row.parameter: row for row in rows[: len(first)]}
    return [by_name[name] for name in first] + rows[len(first) :]


def _critic_head_rows() -> list[Row]:
    return [
        setting("d_hidden", "critic.d_hidden"),
        setting("n_layers", "critic.n_layers"),
        setting("dropout_p", "critic.dropout"),
        setting("activation", "critic.activation"),
    ]


def _dist_choices() -> list[Row]:
    return [
        choice(
            "continuous_dist_type",
            "agent.continuous_dist.type",
            "TanhGaussian GMM Beta Multibinary",
            note="amago uses a Bernoulli policy for MultiBinary action spaces by itself.",
        ),
        choice("discrete_dist_type", "agent.discrete_dist.type", "Discrete"),
    ]


AGENTS: tuple[GinConfigurable, ...] = (
    make_configurable(
        "Agent",
        "amago.agent",
        "agent",
        "The off-policy actor-critic: the `agent` agent.",
        _agent_rows("Agent", _AGENT_CONTEXT),
        picks=(("agent.kind", "agent"),),
    ),
    make_configurable(
        "MultiTaskAgent",
        "amago.agent",
        "agent",
        "Two-hot classification critics for returns of many scales: the `multitask` agent.",
        _agent_rows("MultiTaskAgent", _MULTITASK_CONTEXT),
        picks=(("agent.kind", "multitask"),),
    ),
    make_configurable(
        "Multigammas",
        "amago.agent",
        "agent",
        "The extra discount factors every agent learns: `agent.multigammas`.",
        [
            setting(
                "discrete",
                "multigammas",
                note="amago keeps one list for every action space: use the one for your env's actions.",
            ),
            setting(
                "continuous",
                "multigammas",
                note="amago keeps one list for every action space: use the one for your env's actions.",
            ),
        ],
    ),
    make_configurable(
        "binary_filter",
        "amago.agent",
        "agent.fbc_filter",
        "The binary advantage filter of filtered behaviour cloning, AMAGO's default.",
        [_ADV, setting("threshold")],
        picks=(("agent.fbc_filter.type", "binary"),),
    ),
    make_configurable(
        "exp_filter",
        "amago.agent",
        "agent.fbc_filter",
        "The exponential advantage filter (AWAC / CRR-exp).",
        [
            _ADV,
            setting("beta"),
            setting("clip_adv_low", "adv_clip_low"),
            setting("clip_adv_high", "adv_clip_high"),
            setting("clip_weights_low", "weight_clip_low"),
            setting("clip_weights_high", "weight_clip_high"),
        ],
        picks=(("agent.fbc_filter.type", "exp"),),
    ),
    make_configurable(
        "leaky_relu_filter",
        "amago.agent",
        "agent.fbc_filter",
        "The leaky-ReLU advantage filter.",
        [
            _ADV,
            *same_names("beta tau"),
            setting("neg_slope", "negative_slope"),
            setting("target_f0"),
            setting("clip_weights_low", "clip_low"),
            setting("clip_weights_high", "clip_high"),
            setting("add_binary"),
        ],
        picks=(("agent.fbc_filter.type", "leaky_relu"),),
    ),
    make_configurable(
        "Actor",
        "amago.nets.actor_critic",
        "agent.actor",
        "The MLP actor head, AMAGO's default.",
        [
            _STATE_DIM,
            _ACTION_DIM,
            _DISCRETE,
            _GAMMAS,
            *same_names("n_layers d_hidden activation"),
            setting("dropout_p", "dropout"),
            *_dist_choices(),
        ],
        picks=(("agent.actor.type", "plain"),),
    ),
    make_configurable(
        "ResidualActor",
        "amago.nets.actor_critic",
        "agent.actor",
        "The residual actor head.",
        [
            _STATE_DIM,
            _ACTION_DIM,
            _DISCRETE,
            _GAMMAS,
            *same_names("feature_dim residual_ff_dim residual_blocks activation"),
            setting("normalization", "norm", convert="norm"),
            setting("dropout_p", "dropout"),
            *_dist_choices(),
        ],
        picks=(("agent.actor.type", "residual"),),
    ),
    make_configurable(
        "NCritics",
        "amago.nets.actor_critic",
        "agent",
        "The ensemble of Q-value critics of the `agent` agent (`agent.critic`).",
        [
            _STATE_DIM,
            _ACTION_DIM,
            _DISCRETE,
            _GAMMAS,
            by_run("num_critics", "the agent passes its `num_critics` (`agent.num_critics`)."),
            *_critic_head_rows(),
        ],
        picks=(("agent.kind", "agent"),),
    ),
    make_configurable(
        "NCriticsTwoHot",
        "amago.nets.actor_critic",
        "agent",
        "The ensemble of two-hot classification critics of the `multitask` agent (`agent.critic` and the bins' "
        "options).",
        [
            _STATE_DIM,
            _ACTION_DIM,
            _GAMMAS,
            _DISCRETE,
            by_run("num_critics", "the agent passes its `num_critics` (`agent.num_critics`)."),
            *_critic_head_rows(),
            *same_names("min_return max_return output_bins use_symlog label_type"),
            setting("sigma", "hlgauss_sigma"),
            setting("init_value", "critic_init_value"),
        ],
        picks=(("agent.kind", "multitask"),),
    ),
    make_configurable(
        "PopArtLayer",
        "amago.nets.actor_critic",
        "agent.popart",
        "PopArt value normalisation of both agents: `agent.popart`.",
        [
            by_run("gammas", "the number of discount factors, passed by the agent."),
            *same_names("beta init_nu"),
            by_run(
                "enabled",
                "the agent passes its `popart` (`agent.popart.enabled`); gin refuses to bind it (AMAGO's denylist).",
            ),
        ],
    ),
    make_configurable(
        "Discrete",
        "amago.nets.policy_dists",
        "agent.discrete_dist",
        "The categorical policy of discrete action spaces.",
        [_D_ACTION, *same_names("clip_prob_low clip_prob_high")],
        picks=(("agent.discrete_dist.type", "discrete"),),
    ),
    make_configurable(
        "TanhGaussian",
        "amago.nets.policy_dists",
        "agent.continuous_dist",
        "The tanh-squashed Gaussian policy, AMAGO's default.",
        [
            _D_ACTION,
            *same_names("std_low std_high"),
            no_counterpart(
                "std_activation",
                "amago bounds the standard deviation as AMAGO's default does (`tanh_bounded_positive`); another "
                "function needs an agent plugin.",
            ),
            no_counterpart(
                "clip_actions_on_log_prob",
                "amago clamps buffer actions to ±0.99 before their log-probability, AMAGO's default; other bounds "
                "need an agent plugin.",
                (-0.99, 0.99),
            ),
        ],
        picks=(("agent.continuous_dist.type", "tanh_gaussian"),),
    ),
    make_configurable(
        "GMM",
        "amago.nets.policy_dists",
        "agent.continuous_dist",
        "A mixture of tanh-squashed Gaussians.",
        [
            _D_ACTION,
            setting("gmm_modes", "modes"),
            setting("std_low"),
            no_counterpart(
                "std_high",
                "amago's mixture has no upper bound on the standard deviation, AMAGO's default (`None`).",
                None,
            ),
            no_counterpart(
                "std_activation",
                "amago uses AMAGO's default (`softplus_bounded_positive`); another function needs an agent plugin.",
            ),
        ],
        picks=(("agent.continuous_dist.type", "gmm"),),
    ),
    make_configurable(
        "Beta",
        "amago.nets.policy_dists",
        "agent.continuous_dist",
        "The Beta policy rescaled to [-1, 1].",
        [
            _D_ACTION,
            no_counterpart(
                "alpha_low",
                "amago keeps AMAGO's default: alpha is softplus + 1.0001 (a unimodal Beta).",
                1.0001,
            ),
            no_counterpart("alpha_high", "amago keeps AMAGO's default: no upper bound (`None`).", None),
            no_counterpart(
                "beta_low",
                "amago keeps AMAGO's default: beta is softplus + 1.0001 (a unimodal Beta).",
                1.0001,
            ),
            no_counterpart("beta_high", "amago keeps AMAGO's default: no upper bound (`None`).", None),
            no_counterpart(
                "std_activation",
                "amago keeps AMAGO's default softplus; another function needs an agent plugin.",
            ),
            no_counterpart(
                "clip_actions_on_log_prob",
                "amago clamps buffer actions to ±0.99 before their log-probability, AMAGO's default.",
                (-0.99, 0.99),
            ),
        ],
        picks=(("agent.continuous_dist.type", "beta"),),
    ),
    make_configurable(
        "Multibinary",
        "amago.nets.policy_dists",
        "agent",
        "AMAGO's Bernoulli policy for MultiBinary action spaces, which its scripts picked with "
        "`Actor.continuous_dist_type = @Multibinary`; amago uses one for those action spaces by itself.",
        [_D_ACTION],
    ),
    make_configurable(
        "DiscreteLikeContinuous",
        "amago.nets.policy_dists",
        "agent",
        "Discrete actions as one-hots with Gumbel-softmax samples, which AMAGO's `MultiTaskAgent` always uses: "
        "amago's `discrete_like_continuous`, always on for `multitask` (on `agent` it turns the same treatment on).",
        [
            by_run("categorical", "the policy's categorical distribution, passed by the agent."),
            setting("gumbel_softmax_temperature", "gumbel_temperature"),
        ],
        picks=(("agent.kind", "multitask"), ("agent.discrete_like_continuous", True)),
    ),
    make_configurable(
        "EpsilonGreedy",
        "amago.envs.exploration",
        "exploration",
        "Epsilon-greedy (discrete) or Gaussian (continuous) exploration: the `egreedy` exploration.",
        [_ENV, *same_names("eps_start eps_end steps_anneal randomize_eps")],
        picks=(("exploration.kind", "egreedy"),),
        base="BilevelEpsilonGreedy",  # and passes every one of its arguments itself
    ),
    make_configurable(
        "BilevelEpsilonGreedy",
        "amago.envs.exploration",
        "exploration",
        "Epsilon annealed over training and decayed within each rollout: the `bilevel` exploration.",
        [
            _ENV,
            *same_names(
                "rollout_horizon eps_start_start eps_start_end eps_end_start eps_end_end steps_anneal randomize_eps"
            ),
        ],
        picks=(("exploration.kind", "bilevel"),),
    ),
    make_configurable(
        "AtariGame",
        "amago.envs.builtin.ale_retro",
        "env",
        "One Atari game through ale-py: the `ale` env suite (env ids `ale-<Game>`, e.g. `--env ale-Pong`).",
        [
            setting(
                "game",
                "task",
                note="the game's name as ale-py spells it (`Pong`), as in the env id `ale-Pong`.",
            ),
            *same_names("resolution grayscale"),
            setting("time_limit", "time_limit_frames"),
            *same_names("frame_skip channels_last action_space sticky_action_prob terminal_on_life_loss"),
            no_counterpart("version", "amago always plays `ALE/<Game>-v5`, AMAGO's default version.", "v5"),
            *same_names("continuous_action_threshold clip_rewards"),
        ],
        picks=(("env.kind", "ale"),),
    ),
)
"""The configurables from ``amago.agent`` on, in the order of AMAGO's modules."""
