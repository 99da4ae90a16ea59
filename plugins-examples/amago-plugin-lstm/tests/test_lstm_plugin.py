"""The plugin keeps amago's trajectory-encoder contract and is discoverable once installed."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

pytest.importorskip("amago_plugin_lstm", reason="install the workspace (uv sync) to test the plugin")
pytest.importorskip("torch")

from amago_core.testing.nets_checks import check_traj_encoder
from amago_plugin_lstm.specs import LSTM_SPEC


def test_passes_amagos_trajectory_encoder_check() -> None:
    check_traj_encoder(LSTM_SPEC, {"d_hidden": 16, "n_layers": 2, "d_output": 8})


def test_passes_with_defaults() -> None:
    check_traj_encoder(LSTM_SPEC, None)


def test_is_registered_under_its_entry_point() -> None:
    found = [ep for ep in entry_points(group="amago.traj_encoders") if ep.name == "lstm"]
    assert len(found) == 1
    assert found[0].load() is LSTM_SPEC


def test_config_fields_are_documented() -> None:
    assert LSTM_SPEC.config.fields_missing_docs() == []
