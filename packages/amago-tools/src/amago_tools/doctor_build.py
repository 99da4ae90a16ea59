"""`amago doctor`'s build check: every installed component's factory imported and built once, in a child process.

`amago list` imports spec modules only (fast, torch-free), so ``ok`` there means the spec loads. Here each factory
is imported and called with its component's default config on a tiny example input (:mod:`amago_tools.build_check`
runs in the child), so a factory that fails to import or raises when built is a doctor error. It reaches the
doctor through the ``amago_doctor_checks`` hook, as any plugin's check does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from amago_core.cli.doctor import component_problem
from amago_core.plugins.in_process import InProcessSpec
from amago_core.plugins.registry import Status, registries

BUILD_CHECK_TIMEOUT_S = 120.0
"""How long the build check's child process may run; components it did not reach are reported as unchecked."""


@dataclass
class BuildFailure:
    """A component whose factory failed the build check."""

    stage: str
    """``import`` (the factory cannot be imported) or ``build`` (calling it raised or returned None)."""
    why: str
    """The error, one line."""


def find_failing_builds(
    labels: Sequence[str], timeout_s: float = BUILD_CHECK_TIMEOUT_S
) -> tuple[dict[str, BuildFailure], list[str], str]:
    """Imports each component's factory and builds it on a tiny example input, in a child process.

    Args:
        labels: ``group:name`` of each component to check.
        timeout_s: how long the child may run.

    Returns:
        ``(failures by label, labels left unchecked, why they were left)``: unchecked when the child timed out
        or died before reaching them.
    """
    if not labels:
        return {}, [], ""
    command = [sys.executable, "-m", "amago_tools.build_check", *labels]
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=timeout_s)
        stdout = result.stdout
        stopped = f"the check's process failed: {(result.stderr.strip().splitlines() or ['no message'])[-1]}"
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        stopped = f"the check ran out of its {timeout_s:g} s"
    failures: dict[str, BuildFailure] = {}
    checked: set[str] = set()
    for line in stdout.splitlines():
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a component printed to stdout while being built (even JSON nested past what Python parses)
        if not isinstance(row, dict) or "label" not in row:
            continue
        checked.add(row["label"])
        if not row.get("ok"):
            failures[row["label"]] = BuildFailure(str(row.get("stage")), str(row.get("why")))
    unchecked = [label for label in labels if label not in checked]
    return failures, unchecked, stopped if unchecked else ""


def check_builds(report: Any) -> None:
    """Adds a doctor error per component whose factory cannot be imported or built, and a warning naming those
    the check did not reach."""
    buildable: dict[str, Any] = {}  # component label -> its spec
    for registry in registries():
        for info in registry.describe():
            # A class a script registered lives only in this process: the child cannot import it.
            if (
                info.spec is not None
                and info.status is Status.OK
                and not isinstance(info.spec, InProcessSpec)
            ):
                buildable[f"{registry.group.cli_name}:{info.name}"] = (
                    info.spec,
                    "; ".join(info.distribution),
                )
    failures, unchecked, stopped = find_failing_builds(list(buildable))
    for label, failure in failures.items():
        spec, origin = buildable.get(label, (None, "?"))
        factory = spec.factory if spec is not None else "?"
        if failure.stage == "import":
            what = f"its factory {factory!r} cannot be imported ({failure.why})"
        else:
            what = (
                f"its factory {factory!r} raises when built with its default config on a tiny example input "
                f"({failure.why}); check_component reproduces it"
            )
        detail = f"{what}; fix or reinstall {origin}, or block it with AMAGO_BLOCK_PLUGINS=<distribution>"
        report.errors.append(component_problem(label, detail, broken=True, spec=spec))
    if unchecked:
        report.warnings.append(f"build check: {stopped}; not built: {', '.join(unchecked)}")
