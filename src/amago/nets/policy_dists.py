"""AMAGO's ``amago.nets.policy_dists``: in amago the policy distribution is an option of the agent
(``-o agent.continuous_dist.type=beta``), not a class bound with gin."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={
        "PolicyOutput": "policy distributions are the agent options discrete_dist and continuous_dist",
    },
    standins={
        "Discrete": "the discrete policy is the agent option discrete_dist "
        "(-o agent.discrete_dist.clip_prob_low=1e-6 -o agent.discrete_dist.clip_prob_high=1.0)",
        "DiscreteLikeContinuous": "discrete actions as one-hots with Gumbel-softmax samples are the agent option "
        "discrete_like_continuous: -o agent.discrete_like_continuous=true (always on with --agent multitask; "
        "the temperature: -o agent.gumbel_temperature=0.5)",
        "TanhGaussian": "the default continuous policy: -o agent.continuous_dist.type=tanh_gaussian "
        "(std_low, std_high)",
        "GMM": "-o agent.continuous_dist.type=gmm (modes, std_low)",
        "Beta": "-o agent.continuous_dist.type=beta",
        "Multibinary": "MultiBinary action spaces always get independent Bernoullis; nothing to set",
    },
)
