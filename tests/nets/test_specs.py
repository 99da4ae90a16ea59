"""The specs: torch-free to import, reachable through entry points, documented and validated."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest
from pydantic import ValidationError

from amago_nets import specs

TRAJ_SPECS = [specs.IDENTITY_TRAJ, specs.FF_TRAJ, specs.RNN_TRAJ, specs.TRANSFORMER_TRAJ, specs.MAMBA_TRAJ]
TSTEP_SPECS = [specs.FF_TSTEP, specs.CNN_TSTEP, specs.BABYAI_TSTEP, specs.XLAND_TSTEP]


@pytest.mark.parametrize("module", ["amago_nets.specs", "amago_nets", "amago_core.testing.nets_checks"])
def test_importing_does_not_import_torch(module: str) -> None:
    code = f"import sys, {module}; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("group", "expected"),
    [
        ("amago.traj_encoders", {"identity", "ff", "rnn", "gru", "transformer", "mamba"}),
        ("amago.tstep_encoders", {"ff", "cnn", "babyai", "xland"}),
    ],
)
def test_entry_points_name_the_specs(group: str, expected: set[str]) -> None:
    found = {ep.name: ep for ep in entry_points(group=group) if ep.value.startswith("amago_nets.")}
    assert set(found) == expected
    for name, ep in found.items():
        spec = ep.load()
        assert spec.group == group
        assert name == spec.name or name in spec.aliases


def test_gru_is_an_alias_of_rnn() -> None:
    gru = next(ep for ep in entry_points(group="amago.traj_encoders") if ep.name == "gru").load()
    assert gru is specs.RNN_TRAJ
    assert specs.RNN_TRAJ.make_config({"kind": "gru"}).kind == "rnn"


@pytest.mark.parametrize("spec", TRAJ_SPECS + TSTEP_SPECS, ids=lambda s: f"{s.group}:{s.name}")
def test_every_config_field_is_documented_and_defaults_validate(spec) -> None:
    assert spec.config.fields_missing_docs() == []
    config = spec.make_config(None)
    assert config.kind == spec.name
    assert spec.config.model_validate(config.to_dict()) == config


def test_unknown_key_suggests_the_right_one() -> None:
    with pytest.raises(ValidationError, match="did you mean 'n_heads'"):
        specs.TRANSFORMER_TRAJ.make_config({"n_head": 4})


@pytest.mark.parametrize(
    ("spec", "bad", "fragment"),
    [
        (specs.TRANSFORMER_TRAJ, {"d_model": 30, "n_heads": 4}, "must divide"),
        (specs.TRANSFORMER_TRAJ, {"d_model": 12, "n_heads": 4, "pos_emb": "rope"}, "even head size"),
        (specs.TRANSFORMER_TRAJ, {"window_size": 0}, "window_size"),
        (specs.TRANSFORMER_TRAJ, {"attention": "flex", "dropout_attn": 0.1}, "dropout_attn=0"),
        (specs.MAMBA_TRAJ, {"chunk_size": 0}, "at least 1"),
        (specs.CNN_TSTEP, {"aug_pct_of_batch": 1.5}, r"\[0, 1\]"),
        (specs.FF_TSTEP, {"n_layers": 0}, "at least 1"),
    ],
)
def test_invalid_configs_are_rejected_with_the_fix(spec, bad, fragment) -> None:
    with pytest.raises(ValidationError, match=fragment):
        spec.make_config(bad)


def test_base_classes_are_reachable_from_the_package() -> None:
    import amago_nets
    from amago_nets.base import TrajEncoder, TstepEncoder

    assert amago_nets.TrajEncoder is TrajEncoder
    assert amago_nets.TstepEncoder is TstepEncoder
