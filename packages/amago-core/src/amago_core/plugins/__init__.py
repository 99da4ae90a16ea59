"""The plugin API: component specs, entry-point registries and the switches that control them (torch-free)."""

from amago_core.plugins.discovery import EntryRecord, PluginSwitches, builtin_distributions
from amago_core.plugins.errors import (
    BrokenPluginError,
    DuplicateComponentError,
    InvalidSpecError,
    MissingRequirementError,
    PluginError,
    UnknownComponentError,
)
from amago_core.plugins.groups import (
    AGENTS,
    ENV_SUITES,
    EXPLORATIONS,
    GROUPS,
    RELABELERS,
    TRAJ_ENCODERS,
    TSTEP_ENCODERS,
    ComponentGroup,
    find_group,
)
from amago_core.plugins.in_process import IN_PROCESS_KEY, InProcessSpec
from amago_core.plugins.registry import (
    ComponentInfo,
    Registries,
    Registry,
    Status,
    normalize_name,
    registries,
    reset_registries,
)
from amago_core.plugins.spec import PLUGIN_API_VERSION, ComponentSpec, OwnEnvironment

__all__ = [
    "AGENTS",
    "ENV_SUITES",
    "EXPLORATIONS",
    "GROUPS",
    "IN_PROCESS_KEY",
    "PLUGIN_API_VERSION",
    "RELABELERS",
    "TRAJ_ENCODERS",
    "TSTEP_ENCODERS",
    "BrokenPluginError",
    "ComponentGroup",
    "ComponentInfo",
    "ComponentSpec",
    "DuplicateComponentError",
    "EntryRecord",
    "InProcessSpec",
    "InvalidSpecError",
    "MissingRequirementError",
    "OwnEnvironment",
    "PluginError",
    "PluginSwitches",
    "Registries",
    "Registry",
    "Status",
    "UnknownComponentError",
    "builtin_distributions",
    "find_group",
    "normalize_name",
    "registries",
    "reset_registries",
]
