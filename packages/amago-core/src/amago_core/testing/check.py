"""``check_component``: the conformance check a plugin author runs on their component.

Generic checks (every kind): the spec loads from its entry point, the config has a pinned ``kind`` and a
docstring per field, it round-trips through JSON, the spec module imports no torch, and the component
builds through its factory. Kind-specific checks (shapes, step-by-step vs full forward, per-row resets...)
are looked up in ``KIND_CHECKS`` and run after the generic ones.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from amago_core.config.component import ComponentConfig
from amago_core.plugins.groups import ComponentGroup, find_group
from amago_core.plugins.spec import ComponentSpec

KIND_CHECKS: dict[ComponentGroup, str] = {
    ComponentGroup.TRAJ_ENCODERS: "amago_core.testing.nets_checks:check_traj_encoder",
    ComponentGroup.TSTEP_ENCODERS: "amago_core.testing.nets_checks:check_tstep_encoder",
}
"""Group -> ``module:function(spec, config)`` running that kind's behavioural checks."""


class ComponentCheckError(AssertionError):
    """A component failed a conformance check; the message names the check and what to fix."""


@dataclass
class CheckReport:
    """What ``check_component`` verified.

    Attributes:
        spec: the component's spec.
        config: the config it was checked with.
        passed: names of the checks that passed, in order.
        built: the object the factory built (for further checks by the caller), when built.
    """

    spec: ComponentSpec
    config: ComponentConfig
    passed: list[str] = field(default_factory=list)
    built: Any = None


def spec_module_imports_torch(spec_module: str) -> bool:
    """Imports ``spec_module`` in a fresh interpreter and tells whether torch came with it."""
    code = f"import importlib, sys; importlib.import_module({spec_module!r}); print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        msg = f"importing {spec_module} in a fresh interpreter failed: {result.stderr.strip().splitlines()[-1:]}"
        raise ComponentCheckError(msg)
    return result.stdout.strip() == "True"


def check_component(
    group: ComponentGroup | str,
    name: str,
    *,
    config: ComponentConfig | Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
) -> CheckReport:
    """Runs the conformance checks for the installed component ``name`` of ``group``.

    Args:
        group: the component group or its CLI kind (``"traj-encoders"``).
        name: the registered name (an alias is checked to resolve too).
        config: config to check with (default: the component's defaults).
        context: keyword context to build with when the kind has no behavioural check of its own.

    Returns:
        The report of passed checks.

    Raises:
        ComponentCheckError: a check failed (an AssertionError, so pytest shows it as a failure).
        amago_core.plugins.PluginError: the component cannot be found, loaded, or lacks a requirement.
    """
    from amago_core.plugins.registry import registries

    group = find_group(group) if isinstance(group, str) else group
    registry = registries()[group]
    spec = registry.check_buildable(name)
    report = CheckReport(spec=spec, config=spec.make_config(config))
    report.passed.append("spec loads from its entry point and its requirements are installed")

    if spec.config.kind_name() != spec.name:
        msg = f"{spec.config.__name__}.kind must be pinned to {spec.name!r}"
        raise ComponentCheckError(msg)
    undocumented = spec.config.fields_missing_docs()
    if undocumented:
        msg = (
            f"{spec.config.__name__}: add a docstring below each field; missing for {', '.join(undocumented)}"
        )
        raise ComponentCheckError(msg)
    report.passed.append("config pins kind and documents every field")

    round_tripped = spec.config.model_validate_json(report.config.model_dump_json())
    if round_tripped != report.config:
        msg = f"{spec.config.__name__} does not survive a JSON round trip: {report.config!r} -> {round_tripped!r}"
        raise ComponentCheckError(msg)
    report.passed.append("config JSON round trip")

    entry_modules = {
        r.value.partition(":")[0] for alias in (spec.name, *spec.aliases) for r in registry.records(alias)
    }
    for module in sorted(entry_modules):
        if spec_module_imports_torch(module):
            msg = f"spec module {module} imports torch; import it inside the factory module instead"
            raise ComponentCheckError(msg)
    report.passed.append("spec module is torch-free")

    kind_check = KIND_CHECKS.get(group)
    if kind_check is not None:
        module_name, _, function = kind_check.partition(":")
        report.built = getattr(importlib.import_module(module_name), function)(spec, report.config)
        report.passed.append(f"{group.label} behaviour checks")
    elif context is not None:
        report.built = spec.build(report.config, **dict(context))
        if report.built is None:
            msg = f"factory {spec.factory} returned None"
            raise ComponentCheckError(msg)
        report.passed.append("builds through its factory")
    return report
