"""AMAGO's ``amago.nets.actor_critic``: in amago the actor and critic heads are options of the agent, set as
tables (``-o agent.actor.n_layers=3``), not classes bound with gin."""

from __future__ import annotations

from amago._compat import shim_exports

__getattr__, __dir__, __all__ = shim_exports(
    __name__,
    {},
    no_counterpart={
        "BaseActorHead": "actor heads are the agent option actor (type plain or residual)",
        "BaseCriticHead": "critic heads are the agent options critic and num_critics",
    },
    standins={
        "Actor": "the actor head is the agent option actor (-o agent.actor.n_layers=2 -o agent.actor.d_hidden=256)",
        "ResidualActor": "the residual actor is -o agent.actor.type=residual (feature_dim, residual_ff_dim, "
        "residual_blocks under agent.actor)",
        "NCritics": "the critic ensemble is the agent options critic (-o agent.critic.d_hidden=256) and "
        "num_critics",
        "NCriticsTwoHot": "two-hot critics come with --agent multitask (-o agent.min_return=... "
        "-o agent.max_return=... -o agent.output_bins=...; init_value: -o agent.critic_init_value=...)",
        "PopArtLayer": "PopArt is the agent option popart (-o agent.popart.enabled=false, agent.popart.beta)",
    },
)
