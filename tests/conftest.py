"""Fixtures of the whole suite."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True)
def _no_wandb_threads_left():
    """Stops wandb's service threads after a test that started them: they outlive a finished run, and a thread that
    reads the C environment while a later test changes it (``monkeypatch.setenv``) can crash the suite's process
    (glibc's environment is not thread-safe; see ``tests/distributed/test_ray_collectors.py``)."""
    yield
    wandb = sys.modules.get("wandb")
    if wandb is not None:
        wandb.teardown()  # ~3 µs when no service runs
