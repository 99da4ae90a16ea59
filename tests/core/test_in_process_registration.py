"""Components a script registers in its own process (AMAGO's ``@register_traj_encoder("name")``).

The name works wherever a registered name does in that process (``Experiment``, ``amago run -o`` started from it,
``amago list``), builds exactly like the class given for the slot, and a run records the class's path; reading
that record back where nothing registered the name says which module to import, importing nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError
from torch import nn
from typer.testing import CliRunner

from amago import Experiment
from amago_core.cli.app import app
from amago_core.config.components import resolve_component
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.sources import PROVENANCE_KEY
from amago_core.experiment.provenance import run_record
from amago_core.plugins import (
    ENV_SUITES,
    GROUPS,
    DuplicateComponentError,
    Registries,
    Status,
    UnknownComponentError,
    in_process,
    registries,
    reset_registries,
)
from amago_core.plugins.in_process import IN_PROCESS_KEY, InProcessSpec
from amago_nets.base import TrajEncoder
from amago_nets.traj_rnn import GRUTrajEncoder

from .conftest import plugin_modules

runner = CliRunner()


class PlainEncoder(TrajEncoder):
    """A memoryless encoder written as an AMAGO script writes one."""

    def __init__(self, tstep_dim, max_seq_len):
        super().__init__(tstep_dim=tstep_dim, max_seq_len=max_seq_len)
        self.layer = nn.Linear(tstep_dim, 8)

    @property
    def emb_dim(self) -> int:
        return 8

    def forward(self, seq, time_idxs, hidden_state=None):
        return torch.tanh(self.layer(seq)), hidden_state


class ScriptGRU(GRUTrajEncoder):
    """A subclass of an installed encoder's class."""


class OtherGRU(GRUTrajEncoder):
    """Never registered: given as a class, it shows what the class path builds."""


PLAIN = f"{__name__}:PlainEncoder"
SCRIPT_GRU = f"{__name__}:ScriptGRU"
CONTEXT = {"tstep_dim": 6, "max_seq_len": 4}


@pytest.fixture(autouse=True)
def forget_registrations():
    """What a test registers in this process is forgotten after it."""
    before = {group: set(in_process.specs(group)) for group in GROUPS}
    yield
    for group in GROUPS:
        for name in set(in_process.specs(group)) - before[group]:
            in_process.remove(group, name)


@pytest.fixture
def plain():
    """``script_plain``: the AMAGO-style class, registered."""
    return registries().traj_encoders.register_in_process("script_plain", PlainEncoder)


@pytest.fixture
def script_gru():
    """``script_gru``: the GRU subclass, registered."""
    return registries().traj_encoders.register_in_process("script_gru", ScriptGRU)


def _experiment(tmp_path: Path, **settings) -> Experiment:
    return Experiment(env="tmaze-passive", run_name="inproc", ckpt_base_dir=str(tmp_path), **settings)


# ---- the registry ----------------------------------------------------------------------------------------


def test_every_registry_sees_a_registration_at_once_and_after_a_rescan():
    scanned_before = Registries()
    spec = registries().traj_encoders.register_in_process("Script-Plain", PlainEncoder)
    assert isinstance(spec, InProcessSpec)
    assert (spec.name, spec.factory, spec.target, spec.base) == ("script_plain", PLAIN, PlainEncoder, None)
    for regs in (scanned_before, registries(), Registries()):
        registry = regs.traj_encoders
        assert "script_plain" in registry
        assert "script_plain" in registry.names()
        assert registry.spec("script-plain") is spec
        assert registry.records("script_plain") == []  # no distribution's entry point
    reset_registries()
    assert registries().traj_encoders.spec("script_plain") is spec
    assert registries().traj_encoders.unregister_in_process("script_plain")
    assert "script_plain" not in registries().traj_encoders


def test_listing_marks_it_in_process(plain):
    info = {i.name: i for i in registries().traj_encoders.describe()}["script_plain"]
    assert info.status is Status.OK
    assert info.distribution == [f"in-process ({PLAIN})"]
    assert info.summary == "A memoryless encoder written as an AMAGO script writes one."
    assert info.to_json()["in_process"] is True
    assert {i.name: i for i in registries().traj_encoders.describe()}["rnn"].to_json()["in_process"] is False


def test_only_the_four_amago_groups_take_registrations():
    with pytest.raises(ValueError, match="env suites cannot be registered in-process") as raised:
        registries()[ENV_SUITES].register_in_process("my_env", PlainEncoder)
    assert "\n" not in str(raised.value)


def test_a_plugin_installed_after_a_registration_is_a_conflict_naming_both(fake_distribution):
    registries().traj_encoders.register_in_process("later", PlainEncoder)
    fake_distribution(
        "amago-plugin-later",
        version="2.0.0",
        entry_points={"amago.traj_encoders": {"later": "later_pkg.specs:SPEC"}},
        modules=plugin_modules("later_pkg", "later"),
    )
    registry = registries().traj_encoders
    with pytest.raises(DuplicateComponentError) as raised:
        registry.spec("later")
    message = str(raised.value)
    assert "amago-plugin-later 2.0.0" in message
    assert PLAIN in message
    assert "\n" not in message
    info = {i.name: i for i in registry.describe()}["later"]
    assert info.status is Status.CONFLICT
    assert info.distribution == ["amago-plugin-later 2.0.0", f"in-process ({PLAIN})"]


def test_a_name_of_an_installed_plugin_is_refused(demo_plugin):
    with pytest.raises(DuplicateComponentError) as raised:
        registries().traj_encoders.register_in_process("dem", PlainEncoder)  # the plugin's alias
    message = str(raised.value)
    assert message == (
        f"cannot register trajectory encoder 'dem' for {PLAIN}: the installed distribution amago-plugin-demo "
        "0.3.0 registers that name (demo_pkg.specs:SPEC); choose another name."
    )


# ---- configs and building: exactly like the class given for the slot --------------------------------------


def test_a_plain_class_takes_no_options_and_builds_from_the_context_alone(tmp_path, plain):
    registry = registries().traj_encoders
    assert list(plain.config.model_fields) == ["kind"]
    with pytest.raises(ValidationError, match="unknown field 'd_hidden'"):
        registry.make_config({"kind": "script_plain", "d_hidden": 8})
    by_name = _experiment(tmp_path, traj_encoder_type="script_plain").components.traj_encoder
    by_class = resolve_component(registry, "traj_encoder", PlainEncoder)
    assert (by_name.name, by_name.origin) == ("script_plain", f"in-process ({PLAIN})")
    assert by_class.spec is plain  # the registered class given for the slot is the registered name
    for built in (by_name.build(**CONTEXT), by_class.build(**CONTEXT)):
        assert type(built) is PlainEncoder
        assert (built.config, built.tstep_dim, built.max_seq_len) == (None, 6, 4)


def test_a_subclass_of_an_installed_class_takes_its_options_and_builds_like_the_class(tmp_path, script_gru):
    assert script_gru.base is not None
    assert script_gru.base.name == "rnn"
    experiment = _experiment(tmp_path, traj_encoder_type={"kind": "script_gru", "d_hidden": 24})
    built = experiment.components.traj_encoder.build(**CONTEXT)
    assert type(built) is ScriptGRU
    assert (
        built.config.kind == "rnn"
    )  # the class gets its base component's own config, as the class path gives
    assert built.config.d_hidden == 24
    # With default options it builds what the class given for the slot builds.
    by_name = registries().traj_encoders.build("script_gru", **CONTEXT)
    by_class = resolve_component(registries().traj_encoders, "traj_encoder", OtherGRU).build(**CONTEXT)
    assert by_name.config == by_class.config
    assert sum(p.numel() for p in by_name.parameters()) == sum(p.numel() for p in by_class.parameters())


def test_a_subclass_given_for_a_slot_takes_the_configs_options_of_its_base(tmp_path):
    from amago_core.experiment import Experiment as CoreExperiment

    def built(traj_encoder: dict) -> GRUTrajEncoder:
        config = {"env": "tmaze-passive", "run": {"name": "sub", "ckpt_base_dir": str(tmp_path)}}
        experiment = CoreExperiment(
            {**config, "traj_encoder": traj_encoder}, classes={"traj_encoder": OtherGRU}
        )
        return experiment.components.traj_encoder.build(**CONTEXT)

    # The options set for the slot are the base component's: the subclass gets them, as AMAGO's gin gave them.
    encoder = built({"kind": "rnn", "d_hidden": 24})
    assert type(encoder) is OtherGRU
    assert encoder.config.d_hidden == 24
    # Options of another component say nothing about this class: it gets its base's defaults.
    default = registries().traj_encoders.make_config("rnn").d_hidden
    assert built({"kind": "ff"}).config.d_hidden == default != 24


def test_a_run_records_the_class_path_beside_the_name(tmp_path, script_gru):
    experiment = _experiment(tmp_path, traj_encoder_type={"kind": "script_gru", "d_hidden": 24})
    record = run_record(experiment.config, experiment.components)
    assert record["traj_encoder"]["kind"] == "script_gru"
    assert record["traj_encoder"]["d_hidden"] == 24
    assert record["traj_encoder"][IN_PROCESS_KEY] == SCRIPT_GRU
    assert "class" not in record["traj_encoder"]
    assert record[PROVENANCE_KEY]["components"]["traj_encoder"] == f"in-process ({SCRIPT_GRU})"
    # Read back where the same class is registered: the same config.
    data = {key: value for key, value in record.items() if key != PROVENANCE_KEY}
    again = ExperimentConfig.validate_with(data, registries())
    assert again.traj_encoder == experiment.config.traj_encoder


def _recorded_config(tmp_path: Path, recorded: str) -> dict:
    experiment = _experiment(tmp_path, traj_encoder_type="script_gru")
    record = run_record(experiment.config, experiment.components)
    record.pop(PROVENANCE_KEY)
    record["traj_encoder"][IN_PROCESS_KEY] = recorded
    return record


def _validation_message(data: dict) -> str:
    with pytest.raises(ValidationError) as raised:
        ExperimentConfig.validate_with(data, registries())
    errors = raised.value.errors()
    assert len(errors) == 1
    assert errors[0]["loc"] == ("traj_encoder",)
    return errors[0]["msg"]


def test_a_record_read_where_nothing_registered_the_name_names_the_module_and_imports_nothing(
    tmp_path, script_gru
):
    data = _recorded_config(tmp_path, "amago_never_imported_module:Enc")
    registries().traj_encoders.unregister_in_process("script_gru")
    message = _validation_message(data)
    assert message == (
        "trajectory encoder 'script_gru' was registered in-process by amago_never_imported_module:Enc in the run "
        "that wrote this config; import amago_never_imported_module (or run it from its script) before resuming "
        "or evaluating the run."
    )
    assert "amago_never_imported_module" not in sys.modules
    data["traj_encoder"][IN_PROCESS_KEY] = "__main__:Enc"
    assert "run it from the script that registered it before resuming" in _validation_message(data)


def test_a_record_of_another_class_under_the_name_names_both(tmp_path, script_gru):
    message = _validation_message(_recorded_config(tmp_path, "train:MyGRU"))
    assert (
        f"registered in-process by train:MyGRU in the run that wrote this config, but this process registered {SCRIPT_GRU}"
        in message
    )
    with pytest.raises(UnknownComponentError):  # the registry's own error, a KeyError as AMAGO's was
        registries().traj_encoders.make_config({"kind": "script_gru", IN_PROCESS_KEY: "train:MyGRU"})


# ---- the command line, started from the registering process ----------------------------------------------


def test_amago_list_and_show_mark_it_in_process(plain, script_gru):
    narrow = runner.invoke(app, ["list", "traj-encoders"], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0, narrow.output
    assert "script_plain (in-process)" in narrow.output
    wide = runner.invoke(app, ["list", "traj-encoders"], env={"COLUMNS": "200"})
    assert f"in-process ({PLAIN})" in wide.output
    rows = {
        row["name"]: row for row in json.loads(runner.invoke(app, ["list", "--json"]).stdout)["traj-encoders"]
    }
    assert rows["script_gru"]["in_process"] is True
    assert rows["script_gru"]["distribution"] == [f"in-process ({SCRIPT_GRU})"]
    shown = runner.invoke(app, ["show", "traj-encoders", "script_gru"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert f"class: {SCRIPT_GRU}, registered in this process; it takes the options of 'rnn'" in shown.output
    details = json.loads(runner.invoke(app, ["show", "traj-encoders", "script_gru", "--json"]).stdout)
    assert (details[IN_PROCESS_KEY], details["options_of"]) == (SCRIPT_GRU, "rnn")
    plugins = json.loads(runner.invoke(app, ["plugins", "--json"]).stdout)["distributions"]
    assert not [row for row in plugins if row["distribution"].startswith("in-process")]


def test_a_dry_run_started_from_the_process_takes_the_name_and_its_options(script_gru):
    result = runner.invoke(
        app, ["run", "-o", "traj_encoder=script_gru", "-o", "traj_encoder.d_hidden=24", "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    chosen = json.loads(result.stdout)["traj_encoder"]
    assert (chosen["kind"], chosen["d_hidden"]) == ("script_gru", 24)


TINY_RUN = {
    "env": {"id": "tmaze-passive", "corridor_length": 3},
    "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 16, "normalize_inputs": False},
    "agent": {"kind": "agent", "reward_multiplier": 100.0},
    "run": {"max_seq_len": 4, "seed": 3},
    "replay": {"traj_save_len": 4},
    "rollout": {"parallel_actors": 2},
    "schedule": {
        "epochs": 1,
        "train_timesteps_per_epoch": 8,
        "train_batches_per_epoch": 2,
        "val_interval": None,
        "ckpt_interval": 1,
    },
    "optim": {"batch_size": 4},
    "logging": {"verbose": False, "plot": False},
}


@pytest.mark.slow
def test_a_run_from_the_process_trains_and_its_folder_asks_for_the_module_elsewhere(tmp_path, plain):
    import amago_tools.policy as policy

    config = tmp_path / "tiny.json"
    config.write_text(json.dumps(TINY_RUN), encoding="utf-8")
    base = tmp_path / "runs"
    trained = runner.invoke(
        app,
        [
            "run",
            "-c",
            str(config),
            "-o",
            "traj_encoder=script_plain",
            "-o",
            f"run.ckpt_base_dir={base}",
            "--name",
            "inproc",
            "--quiet",
            "--no-preflight",
        ],
    )
    assert trained.exit_code == 0, trained.output
    run_dir = base / "inproc"
    record = json.loads((run_dir / "config.resolved.json").read_text(encoding="utf-8"))
    assert record["traj_encoder"] == {"kind": "script_plain", IN_PROCESS_KEY: PLAIN}
    loaded = policy.load_run(run_dir)  # the registering process loads it back
    assert type(loaded.agent.traj_encoder) is PlainEncoder

    registries().traj_encoders.unregister_in_process("script_plain")  # as a process that never imported it
    files_before = sorted((str(p), p.stat().st_mtime_ns) for p in run_dir.rglob("*"))
    expected = (
        f"trajectory encoder 'script_plain' was registered in-process by {PLAIN} in the run that wrote this "
        f"config; import {__name__} (or run it from its script) before resuming or evaluating the run."
    )
    for command in (["run", "--resume", str(run_dir)], ["eval", str(run_dir)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, result.output
        assert result.output == f"amago: error: config: traj_encoder: {expected}\n"
    with pytest.raises(policy.PolicyLoadError) as raised:
        policy.load_policy(run_dir)
    assert str(raised.value).endswith(f"traj_encoder: {expected}")
    assert "\n" not in str(raised.value)
    assert sorted((str(p), p.stat().st_mtime_ns) for p in run_dir.rglob("*")) == files_before


@pytest.mark.slow  # the doctor's build check runs in a child process (~20 s)
def test_doctor_started_from_the_process_leaves_its_registrations_out_of_the_build_check(plain, monkeypatch):
    # The child process that builds every component cannot import a class that lives only in this script.
    from amago_core.cli import doctor
    from amago_tools import doctor_build

    checked: list[str] = []
    real = doctor_build.find_failing_builds

    def recording(buildable):
        checked.extend(buildable)
        return real([label for label in buildable if label.startswith("traj-encoders:")][:1])

    monkeypatch.setattr(doctor_build, "find_failing_builds", recording)
    report = doctor.examine()
    assert "traj-encoders:rnn" in checked  # installed ones still are
    assert not [label for label in checked if "script_plain" in label]
    assert not [line for line in report.errors if "script_plain" in line]
