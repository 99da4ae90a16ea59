"""amago-ray's hooks (registered as ``ray = "amago_ray.doctor_hooks"`` under the ``amago`` entry-point group): its
line in ``amago doctor`` — whether Ray is installed and, when a cluster is expected, whether it is reachable.

Import-cheap like every hook module: Ray is never imported here; joining a cluster runs in a child process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from importlib.metadata import version
from typing import Any

from amago_core.hooks.specs import hookimpl

_RAY_SCRIPT = """
import json, sys
import ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
nodes = [node for node in ray.nodes() if node.get("Alive")]
print(json.dumps({"nodes": len(nodes), "cpus": ray.cluster_resources().get("CPU", 0.0)}))
ray.shutdown()
"""

RAY_PROBE_TIMEOUT_S = 30.0
"""How long the doctor's child process may take to join a Ray cluster before it is called unreachable."""


def ray_cluster_address() -> str | None:
    """The cluster a run with ``ray.address=auto`` would join: ``RAY_ADDRESS``, or the one `ray start` runs on
    this node (Ray records it in ``ray_current_cluster`` under its temp folder); None when there is neither."""
    address = os.environ.get("RAY_ADDRESS")
    if address:
        return address
    marker = os.path.join(os.environ.get("RAY_TMPDIR", tempfile.gettempdir()), "ray", "ray_current_cluster")
    return "auto" if os.path.exists(marker) else None


def check_ray(report: Any) -> None:
    """One line: whether the Ray extra is installed and, when a cluster is expected, whether it is reachable.

    Nothing is imported when Ray is absent or no cluster is expected; joining one runs in a child process.
    """
    if importlib.util.find_spec("ray") is None:
        report.notes.append("ray: not installed (needed for ray.actors > 0: pip install amago-ray)")
        return
    installed = f"ray {version('ray')}: installed"
    address = ray_cluster_address()
    if address is None:
        report.notes.append(
            f"{installed}; no cluster running (ray.actors > 0 starts a local one; `ray start --head` starts one "
            "that `-o ray.address=auto` joins)"
        )
        return
    try:
        result = subprocess.run(
            [sys.executable, "-c", _RAY_SCRIPT, address],
            capture_output=True,
            text=True,
            check=False,
            timeout=RAY_PROBE_TIMEOUT_S,
        )
        lines = result.stdout.strip().splitlines()
        cluster = json.loads(lines[-1]) if result.returncode == 0 and lines else None
        why = (result.stderr.strip().splitlines() or ["failed"])[-1]
    except subprocess.TimeoutExpired:
        cluster, why = None, f"no answer within {RAY_PROBE_TIMEOUT_S:g} s"
    if cluster is None:
        report.warnings.append(
            f"{installed}; the cluster at {address!r} is not reachable ({why}); check `ray status`, or unset "
            "RAY_ADDRESS to let runs start a local cluster"
        )
        return
    report.notes.append(
        f"{installed}; cluster at {address!r} reachable: {cluster['nodes']} node(s), {cluster['cpus']:g} CPUs"
    )


@hookimpl
def amago_doctor_checks(report: Any) -> None:
    """Adds the Ray line to ``amago doctor``."""
    check_ray(report)
