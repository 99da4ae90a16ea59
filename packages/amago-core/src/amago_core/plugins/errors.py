"""Errors raised by the plugin system. Each message names the group, the entry and the next action."""

from __future__ import annotations


class PluginError(Exception):
    """Base class of every plugin-system error."""


class UnknownComponentError(PluginError, KeyError):
    """A name that no installed distribution registers in the group."""

    def __str__(self) -> str:  # KeyError would otherwise wrap the message in quotes
        return str(self.args[0]) if self.args else ""


class DuplicateComponentError(PluginError):
    """Two distributions register the same name in one group; amago refuses to pick one silently."""


class BrokenPluginError(PluginError):
    """A plugin's spec or factory could not be imported or is malformed; the cause is chained."""


class MissingRequirementError(PluginError):
    """A component's optional requirement (e.g. ``mamba_ssm``) is not importable here."""


class InvalidSpecError(PluginError):
    """A ``ComponentSpec`` that contradicts itself (name vs config kind, bad factory string, ...)."""
