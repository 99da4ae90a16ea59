"""pytest fixtures for amago and its plugin authors (loaded automatically through the ``pytest11`` entry point).

- ``fresh_registries``: every registry and the hook manager rescanned before and after the test.
- ``fake_distribution``: a factory that installs a fake distribution (dist-info + modules) for the test.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from amago_core.testing.distributions import FakeDistribution, activate_site, write_distribution


def _forget_everything() -> None:
    from amago_core.hooks.manager import reset_hook_manager
    from amago_core.plugins.registry import reset_registries

    reset_registries()
    reset_hook_manager()


@pytest.fixture
def fresh_registries() -> Iterator[None]:
    """Rescans installed plugins for this test, and again after it (so changes don't leak)."""
    _forget_everything()
    yield
    _forget_everything()


@pytest.fixture
def fake_distribution(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, fresh_registries: None
) -> Iterator[Callable[..., FakeDistribution]]:
    """Factory fixture: ``fake_distribution("amago-plugin-x", entry_points={...}, modules={...})``.

    The distribution is visible to ``importlib.metadata`` and importable for the rest of the test; its
    modules are unloaded and the registries rescanned afterwards. Its site directory is also on
    ``PYTHONPATH`` for subprocesses the test starts.
    """
    site = tmp_path_factory.mktemp("site")
    activate_site(site)
    existing = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", str(site) + (":" + existing if existing else ""))
    created: list[FakeDistribution] = []

    def make(
        name: str,
        *,
        version: str = "1.0.0",
        entry_points: Mapping[str, Mapping[str, str]] | None = None,
        modules: Mapping[str, str] | None = None,
    ) -> FakeDistribution:
        dist = write_distribution(site, name, version=version, entry_points=entry_points, modules=modules)
        created.append(dist)
        _forget_everything()
        return dist

    yield make
    sys.path[:] = [p for p in sys.path if p != str(site)]
    for dist in created:
        for relative in dist.modules:
            top = Path(relative).parts[0].removesuffix(".py")
            for loaded in [m for m in sys.modules if m == top or m.startswith(top + ".")]:
                del sys.modules[loaded]
