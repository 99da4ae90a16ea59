"""Shared setup of the nets tests: one CPU thread (fast and deterministic) and the helper module on sys.path."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

HELPERS_DIR = Path(__file__).parent


@pytest.fixture
def helpers_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes ``nets_test_helpers`` importable, so specs can name its classes as factories."""
    monkeypatch.syspath_prepend(str(HELPERS_DIR))
