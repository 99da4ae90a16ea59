"""Fixtures of the run-folder attacks: one thread per test process, and one finished tiny run to copy."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import tiny_run


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> Path:
    """One finished tiny run (the embedded T-Maze job at tiny sizes); each test plants or resumes a copy."""
    return tiny_run(tmp_path_factory.mktemp("source"))
