"""What replaces AMAGO's component registries (``register_agent``, ``get_traj_encoder_cls``...) in amago.

AMAGO kept a name -> class dict per kind of component; amago finds components as plugins through entry points.
Several of AMAGO's modules re-exported the same registry functions, so their pointers live here once.
"""

from __future__ import annotations

PLUGIN_PAGE = "docs/tutorial/08-write-a-plugin.md"


def registry_pointers(kind: str, plural: str, group: str, attribute: str, keyword: str) -> dict[str, str]:
    """Pointers for AMAGO's ``register_{kind}``, ``get_{kind}_cls`` and ``list_registered_{plural}``.

    Args:
        kind: AMAGO's name of the kind (``traj_encoder``).
        plural: AMAGO's plural in ``list_registered_*`` (``traj_encoders``).
        group: the CLI's name of the group (``traj-encoders``).
        attribute: the ``Registries`` attribute (``traj_encoders``).
        keyword: the ``Experiment`` keyword that takes a name (``traj_encoder_type``).
    """
    return {
        f"register_{kind}": f"write a plugin of the group amago.{attribute} ({PLUGIN_PAGE})",
        f"get_{kind}_cls": f"pass the registered name itself as Experiment({keyword}=NAME); "
        f"amago.registries().{attribute}.spec(NAME) describes it",
        f"list_registered_{plural}": f"run `amago list {group}` or call amago.registries().{attribute}.names()",
    }


AGENT_REGISTRY_POINTERS = registry_pointers("agent", "agents", "agents", "agents", "agent_type")
TSTEP_ENCODER_REGISTRY_POINTERS = registry_pointers(
    "tstep_encoder", "tstep_encoders", "tstep-encoders", "tstep_encoders", "tstep_encoder_type"
)
TRAJ_ENCODER_REGISTRY_POINTERS = registry_pointers(
    "traj_encoder", "traj_encoders", "traj-encoders", "traj_encoders", "traj_encoder_type"
)
EXPLORATION_REGISTRY_POINTERS = {
    **registry_pointers(
        "exploration", "explorations", "explorations", "explorations", "exploration_wrapper_type"
    ),
    "ExplorationWrapper": "an exploration is a plugin of the group amago.explorations whose factory wraps the env; "
    f"subclass amago_envs.exploration.wrappers.BilevelEpsilonGreedy or see {PLUGIN_PAGE}",
}
