"""Installs the frozen plugin for each of its tests (see ../../README.md)."""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture(autouse=True)
def _installed(install_frozen_plugin):
    # The plugin's specs use extra=..., deprecated in plugin API 1; its own tests are about behaviour.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        install_frozen_plugin("api_v1_extra_style")
        yield
