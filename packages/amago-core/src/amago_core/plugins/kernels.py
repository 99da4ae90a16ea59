"""Whether a component's optional CUDA kernels can be used here, answered without importing torch.

A spec lists them in ``ComponentSpec.cuda_kernels``: import name -> install command. ``amago show`` reports each;
``amago doctor`` additionally asks torch (in a child process) whether a CUDA device is usable.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

from amago_core.plugins.spec import ComponentSpec

NVIDIA_DRIVER_FILE = Path("/proc/driver/nvidia/version")


def nvidia_driver_present() -> bool:
    """True when an NVIDIA kernel driver is loaded (Linux); a cheap stand-in for "CUDA could work here"."""
    return NVIDIA_DRIVER_FILE.is_file()


def kernel_report(spec: ComponentSpec) -> list[dict[str, str | bool]]:
    """One entry per optional kernel: module, installed, usable, and why (or why not)."""
    kernels: Mapping[str, str] = spec.cuda_kernels
    driver = nvidia_driver_present()
    report: list[dict[str, str | bool]] = []
    for module, install in kernels.items():
        installed = importlib.util.find_spec(module) is not None
        if not installed:
            why = f"not installed; the pure-PyTorch path is used (on a CUDA machine: {install})"
        elif not driver:
            why = "installed, but no NVIDIA driver is loaded here; the pure-PyTorch path is used"
        else:
            why = "installed and an NVIDIA driver is present: used on CUDA devices (`amago doctor` checks the GPU)"
        report.append({"module": module, "installed": installed, "usable": installed and driver, "why": why})
    return report
