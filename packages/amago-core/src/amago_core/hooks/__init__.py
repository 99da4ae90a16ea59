"""pluggy hooks: log backends, experiment callbacks and extra CLI commands (torch-free)."""

from amago_core.hooks.manager import HookManager, hook_manager, reset_hook_manager
from amago_core.hooks.specs import (
    AmagoHookSpecs,
    EvalRequest,
    LogBackend,
    RunOption,
    RunRequest,
    RunView,
    hookimpl,
    hookspec,
)

__all__ = [
    "AmagoHookSpecs",
    "EvalRequest",
    "HookManager",
    "LogBackend",
    "RunOption",
    "RunRequest",
    "RunView",
    "hook_manager",
    "hookimpl",
    "hookspec",
    "reset_hook_manager",
]
