"""`amago doctor`: loads every plugin, probes requirements and import hygiene, reports accelerators.

`amago list` imports spec modules only (fast, torch-free): ``ok`` there means the spec loads, agrees with its
entry point and its requirements are installed. The doctor also checks that spec and hook modules import no
torch, and adds the plugins' checks (hook ``amago_doctor_checks``; amago-tools builds every component once).

The doctor itself stays torch-free; anything that needs torch runs in a child process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import typer

from amago_core.cli.output import console, fail, print_json
from amago_core.plugins.errors import PluginError
from amago_core.plugins.registry import Status, registries
from amago_core.plugins.spec import ComponentSpec

# Modules the CLI and listing import: they must never pull in torch.
TORCH_FREE_CORE_MODULES = (
    "amago_core.cli.app",
    "amago_core.plugins",
    "amago_core.config.experiment",
    "amago_core.config.sources",
    "amago_core.hooks",
)

_HYGIENE_SCRIPT = """
import importlib, json, sys
report = {}
for name in sys.argv[1:]:
    had_torch = "torch" in sys.modules
    try:
        importlib.import_module(name)
    except Exception as exc:
        report[name] = f"import failed: {type(exc).__name__}: {exc}"
        continue
    if not had_torch and "torch" in sys.modules:
        report[name] = "imports torch"
        break
print(json.dumps({"report": report, "checked": sys.argv[1:]}))
"""


_ACCELERATOR_SCRIPT = """
import importlib.util, json, sys
info = {}
try:
    import torch
except Exception as exc:
    info["torch"] = f"not importable: {exc}"
else:
    info["torch"] = torch.__version__
    info["cuda"] = bool(torch.cuda.is_available())
    if info["cuda"]:
        info["device"] = torch.cuda.get_device_name(0)
        info["bf16"] = bool(torch.cuda.is_bf16_supported())
info["kernels"] = {module: importlib.util.find_spec(module) is not None for module in sys.argv[1:]}
print(json.dumps(info))
"""


def component_problem(label: str, detail: str, *, broken: bool, spec: ComponentSpec | None = None) -> str:
    """The doctor's line for a component that is missing (``broken=False``) or broken.

    A component whose spec sets ``own_environment`` (procgen: numpy<2) gets the way to its own environment: after
    the problem when it is broken, and instead of the install line when this environment rules it out (installing
    it here would break the other components).
    """
    if spec is None or spec.own_environment is None:
        return f"{label}: {detail}"
    try:
        advice, ruled_out = spec.own_environment.advice(spec.name)
    except PluginError as exc:
        return f"{label}: {detail}; {exc}"
    if broken:
        return f"{label}: {detail}; {advice}"
    return f"{label}: {advice}" if ruled_out else f"{label}: {detail}"


@dataclass
class DoctorReport:
    """What the doctor found: errors make it exit 1, warnings and notes do not."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def find_torch_importers(modules: list[str]) -> dict[str, str]:
    """Imports ``modules`` in child processes and returns those that pulled in torch or failed to import."""
    problems: dict[str, str] = {}
    remaining = list(modules)
    while remaining:
        result = subprocess.run(
            [sys.executable, "-c", _HYGIENE_SCRIPT, *remaining], capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            problems["(hygiene check)"] = (
                result.stderr.strip().splitlines()[-1] if result.stderr else "failed"
            )
            break
        found = json.loads(result.stdout)["report"]
        problems.update(found)
        culprit = next((m for m, why in found.items() if why == "imports torch"), None)
        if culprit is None:
            break
        remaining = remaining[remaining.index(culprit) + 1 :]  # torch is loaded now: check the rest afresh
    return problems


def probe_accelerators(kernel_modules: Sequence[str] = ()) -> dict[str, Any]:
    """torch version, CUDA availability and whether each of ``kernel_modules`` is installed, in a child process."""
    command = [sys.executable, "-c", _ACCELERATOR_SCRIPT, *kernel_modules]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(result.stdout)


def examine() -> DoctorReport:
    """Runs every check and returns the report."""
    from amago_core.hooks.manager import hook_manager

    report = DoctorReport()
    regs = registries()
    report.notes.append(f"plugin switches: {regs.switches.describe()}")
    spec_modules: list[str] = []
    kernels: dict[str, tuple[str, list[str]]] = {}  # module -> (install command, components using it)
    for registry in regs:
        for info in registry.describe():
            label = f"{registry.group.cli_name}:{info.name}"
            if info.status in (Status.BROKEN, Status.CONFLICT):
                report.errors.append(component_problem(label, info.detail, broken=True, spec=info.spec))
            elif info.status is Status.MISSING:
                report.warnings.append(component_problem(label, info.detail, broken=False, spec=info.spec))
            if info.spec is not None:
                for module, install in info.spec.cuda_kernels.items():
                    kernels.setdefault(module, (install, []))[1].append(label)
                undocumented = info.spec.config.fields_missing_docs()
                if undocumented:
                    report.warnings.append(
                        f"{label}: config fields without a docstring: {', '.join(undocumented)}"
                    )
        for record in registry.skipped():
            report.notes.append(
                f"{registry.group.cli_name}:{record.name} from {record.origin} is off ({record.skip_reason})"
            )
        for name in registry.names():
            for record in registry.records(name):
                module = record.value.partition(":")[0]
                if module not in spec_modules:
                    spec_modules.append(module)
    try:
        hook_manager().check()
    except PluginError as exc:
        report.errors.append(f"hooks: {exc}")
    hook_modules = [s.record.value.partition(":")[0] for s in hook_manager().statuses if not s.error]
    for module, why in find_torch_importers([*TORCH_FREE_CORE_MODULES, *spec_modules, *hook_modules]).items():
        if why == "imports torch":
            report.errors.append(
                f"import hygiene: {module} imports torch at import time; move the import into a function"
            )
        elif module not in spec_modules:  # a broken spec module is already reported above
            report.errors.append(f"import hygiene: {module}: {why}")
    # Plugins' own lines: amago-tools' build check (every factory built once), amago-ray's cluster.
    hook_manager().hook.amago_doctor_checks(report=report)
    accel = probe_accelerators(sorted(kernels))
    if "error" in accel:
        report.warnings.append(f"accelerator probe failed: {accel['error']}")
        return report
    cuda = accel.get("cuda")
    device = (
        f"CUDA on {accel['device']} (bf16: {accel.get('bf16')})" if cuda else "no CUDA device: CPU paths only"
    )
    report.notes.append(f"torch {accel.get('torch')}; {device}")
    for module, (install, users) in sorted(kernels.items()):
        used_by = f"{module} (used by {', '.join(users)})"
        if accel["kernels"].get(module) and cuda:
            report.notes.append(f"{used_by}: installed; its CUDA kernels are used")
        elif accel["kernels"].get(module):
            report.notes.append(
                f"{used_by}: installed but unusable without CUDA; the pure-PyTorch path is used"
            )
        else:
            report.notes.append(f"{used_by}: not installed; the pure-PyTorch path is used (GPU: {install})")
    return report


def run_doctor(as_json: bool) -> None:
    report = examine()
    if as_json:
        print_json({"ok": not report.errors, **asdict(report)})
    else:
        from rich.markup import escape

        out = console()
        for line in report.notes:
            out.print(f"[dim]-[/] {escape(line)}")
        for line in report.warnings:
            out.print(f"[yellow]![/] {escape(line)}")
        for line in report.errors:
            out.print(f"[red]x[/] {escape(line)}")
        verdict = "[red]problems found[/]" if report.errors else "[green]everything loads[/]"
        out.print(f"{verdict}: {len(report.errors)} error(s), {len(report.warnings)} warning(s)")
    if report.errors:
        raise typer.Exit(1)


def report_run_dir(run_dir: Path, as_json: bool) -> None:
    """``amago doctor RUN_DIR``: the plugin that reports on run folders does (amago-tools: disk use by part)."""
    from amago_core.hooks.manager import hook_manager

    if not hook_manager().hook.amago_doctor_run_dir(run_dir=run_dir, as_json=as_json):
        fail(
            f"no installed plugin reports on run folders like {run_dir}: `amago doctor RUN_DIR` comes with "
            "amago-tools (pip install amago-tools)"
        )
