"""The Ray collector tests (``ray_collectors_cases.py``), run as their own pytest process.

A Ray driver leaves native threads behind after ``ray.shutdown()`` (gRPC pollers, timers and resolvers, Ray's
io threads), and some of them read the C environment (``getenv``) while the suite's main thread keeps changing it
(``monkeypatch.setenv``): glibc's environment is not thread-safe, and a later test's process crashed in ``getenv``
on a thread (SIGSEGV, stop 46's CI). Run alone, the Ray tests take their threads with them when they end.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CASES = Path(__file__).with_name("ray_collectors_cases.py")
ROOT = Path(__file__).resolve().parents[2]
NO_TESTS_SELECTED = 5  # pytest's exit code when the marker expression leaves none


def test_the_ray_collector_cases_pass_in_their_own_process(request):
    pytest.importorskip("ray", reason="the ray extra is not installed (pip install amago-ray)")
    selection = request.config.getoption("markexpr")
    command = [sys.executable, "-m", "pytest", str(CASES), "-p", "no:cacheprovider", "-q"]
    if selection:
        command += ["-m", selection]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode in (0, NO_TESTS_SELECTED), f"{result.stdout[-8000:]}\n{result.stderr[-3000:]}"
