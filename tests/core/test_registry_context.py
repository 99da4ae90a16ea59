"""A run is validated against the registries it is built from, not the process-wide ones.

``plan_run(..., registries=r)``, ``RunPlan.sized`` and ``load_run(..., registries=r)`` look every name up in
``r`` (it reaches the slots through pydantic's validation context): a component only ``r`` holds validates, and
one ``r`` blocks is refused even where the process-wide registries have it. The example plugins are the
components only one distribution provides: ``lstm`` (amago-plugin-lstm) and ``cue-recall`` (amago-plugin-recall-
envs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from amago_core.config.errors import describe_validation_error
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.resolve import RunPlan, plan_recorded, plan_run
from amago_core.config.sizing import size_schedule
from amago_core.config.slots import validation_context
from amago_core.plugins import PluginSwitches, Registries
from amago_core.plugins.errors import UnknownComponentError
from amago_core.plugins.registry import registries, reset_registries

LSTM = {"kind": "lstm", "d_hidden": 16, "d_output": 16}
"""Only amago-plugin-lstm provides it."""


def _registries(blocked: str = "") -> Registries:
    return Registries(PluginSwitches.from_environ({"AMAGO_BLOCK_PLUGINS": blocked} if blocked else {}))


@pytest.fixture
def process_blocks_examples(monkeypatch: pytest.MonkeyPatch, fresh_registries: None) -> None:
    """The process-wide registries without the example plugins (an explicit registry still has them)."""
    monkeypatch.setenv("AMAGO_BLOCK_PLUGINS", "amago-plugin-lstm, amago-plugin-recall-envs")
    reset_registries()
    assert "lstm" not in registries().traj_encoders.names()


def test_a_component_only_the_explicit_registries_hold_validates(process_blocks_examples):
    explicit = _registries()
    flags = {"env": "cue-recall-medium", "traj_encoder": LSTM}
    # What the process-wide registries say: neither is installed.
    with pytest.raises(UnknownComponentError, match="cue-recall-medium"):
        plan_run(flags=flags, environ={})
    with pytest.raises(ValidationError, match="unknown trajectory encoder 'lstm'"):
        plan_run(flags={"traj_encoder": LSTM}, environ={})

    plan = plan_run(flags=flags, environ={}, registries=explicit)
    assert plan.config.traj_encoder.kind == "lstm"
    assert plan.config.traj_encoder.d_hidden == 16
    assert (plan.config.env.kind, plan.config.env.task) == ("cue_recall", "medium")
    assert (
        plan.config.run.max_seq_len == 27
    )  # the suite's preset for the task, found in the explicit registries
    assert plan.registries is explicit


def test_options_without_a_kind_name_the_explicit_registries_default(monkeypatch, fresh_registries):
    # The process-wide registries lack amago-nets (the default traj encoder's distribution); the explicit ones
    # have it: unset slots and kind-less option tables take the explicit registries' default.
    monkeypatch.setenv("AMAGO_BLOCK_PLUGINS", "amago-nets")
    reset_registries()
    explicit = _registries()
    overrides = ["traj_encoder.n_layers=1"]
    with pytest.raises(UnknownComponentError):
        plan_run(flags={"env": "tmaze-passive"}, overrides=overrides, environ={})

    config = plan_run(
        flags={"env": "tmaze-passive"}, overrides=overrides, environ={}, registries=explicit
    ).config
    assert config.traj_encoder.kind == explicit.traj_encoders.default_name()
    assert config.traj_encoder.n_layers == 1
    unset = ExperimentConfig.validate_with({}, explicit)
    assert unset.tstep_encoder == explicit.tstep_encoders.default_name()  # a name until resolved
    assert unset.resolved(explicit).tstep_encoder.kind == unset.tstep_encoder


def test_a_component_the_explicit_registries_block_is_refused_in_one_line(fresh_registries):
    assert "lstm" in registries().traj_encoders.names()
    explicit = _registries("amago-plugin-lstm")
    plan_run(flags={"traj_encoder": LSTM}, environ={})  # the process-wide registries have it

    with pytest.raises(ValidationError) as excinfo:
        plan_run(flags={"traj_encoder": LSTM}, environ={}, registries=explicit)
    (line,) = describe_validation_error(excinfo.value, source="flags")
    assert "traj_encoder" in line
    assert "unknown trajectory encoder 'lstm'" in line
    assert "amago-plugin-lstm" in line  # says which distribution is off, and why
    assert "\n" not in line

    with pytest.raises(ValidationError, match="unknown env"):
        ExperimentConfig.validate_with({"env": "cue-recall-short"}, _registries("amago-plugin-recall-envs"))


def test_the_context_reaches_nested_sections_and_a_wrong_value_says_how_to_build_it(fresh_registries):
    data = {"exploration": None, "replay": {"relabeler": "hindsight"}}  # amago-envs provides both defaults
    assert ExperimentConfig.validate_with(data).replay.relabeler.kind == "hindsight"
    with pytest.raises(ValidationError, match="unknown relabeler 'hindsight'"):
        ExperimentConfig.validate_with(data, _registries("amago-envs"))
    with pytest.raises(TypeError, match="validation_context"):
        ExperimentConfig.model_validate({}, context={"amago_registries": "not registries"})
    assert validation_context(None) is None


def test_sizing_a_plan_validates_against_the_plans_registries(process_blocks_examples):
    explicit = _registries()
    plan = plan_run(flags={"env": "cue-recall-short", "traj_encoder": LSTM}, environ={}, registries=explicit)

    smaller = plan.sized(size_schedule(plan.config, plan.user, 2_000))
    assert isinstance(smaller, RunPlan)
    assert smaller.registries is explicit
    assert smaller.config.traj_encoder.kind == "lstm"
    assert smaller.config.schedule.epochs < plan.config.schedule.epochs
    assert smaller == RunPlan(smaller.config, smaller.user)  # the registries are no part of the plan's value


def _tiny_lstm_run(base: Path) -> Path:
    from amago_core.experiment import Experiment

    job = {
        "env": {"id": "tmaze-passive", "corridor_length": 3},
        "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 16},
        "traj_encoder": LSTM,
        "run": {"max_seq_len": 4, "seed": 1, "ckpt_base_dir": str(base), "name": "lstm"},
        "replay": {"traj_save_len": 4},
        "rollout": {"parallel_actors": 2},
        "schedule": {
            "epochs": 1,
            "train_timesteps_per_epoch": 4,
            "train_batches_per_epoch": 1,
            "val_interval": None,
            "ckpt_interval": None,
        },
        "optim": {"batch_size": 2},
        "logging": {"verbose": False, "plot": False},
    }
    experiment = Experiment(plan_run(flags=job, environ={}))
    experiment.start()
    try:
        experiment.learn()
    finally:
        experiment.close()
    return base / "lstm"


@pytest.mark.slow  # trains a one-epoch run (about 5 s on 2 cores)
def test_a_run_of_a_component_only_the_explicit_registries_hold_loads(
    tmp_path, monkeypatch, fresh_registries
):
    from amago_tools.policy.loader import PolicyLoadError, load_run

    run_dir = _tiny_lstm_run(tmp_path)  # recorded while the process-wide registries had lstm
    monkeypatch.setenv("AMAGO_BLOCK_PLUGINS", "amago-plugin-lstm")
    reset_registries()
    explicit = _registries()

    recorded = plan_recorded(run_dir / "config.resolved.json", explicit)
    assert recorded.user == {}
    assert recorded.registries is explicit
    assert recorded.config.traj_encoder.kind == "lstm"

    loaded = load_run(run_dir, registries=explicit)
    assert loaded.kind("traj_encoder") == "lstm"
    with pytest.raises(PolicyLoadError, match="unknown trajectory encoder 'lstm'"):
        load_run(run_dir)  # the process-wide registries block it
    with pytest.raises(PolicyLoadError, match="unknown trajectory encoder 'lstm'"):
        load_run(run_dir, registries=_registries("amago-plugin-lstm"))


def test_an_experiment_validates_and_builds_against_its_own_registries(process_blocks_examples, tmp_path):
    from amago import Experiment

    settings = {
        "env": "cue-recall-medium",
        "traj_encoder_type": LSTM,
        "ckpt_base_dir": str(tmp_path),
        "run_name": "own-registries",
    }
    with pytest.raises(UnknownComponentError, match="cue-recall-medium"):
        Experiment(**settings)  # the process-wide registries lack both

    explicit = _registries()
    experiment = Experiment(registries=explicit, **settings)
    assert experiment.config.traj_encoder.kind == "lstm"
    assert experiment.components.traj_encoder.name == "lstm"
    # A plan carries its registries into the experiment, and apply_settings keeps validating against them.
    planned = Experiment(
        plan_run(flags={"env": "cue-recall-medium", "traj_encoder": LSTM}, registries=explicit)
    )
    assert planned.registries is explicit
    planned.apply_settings(traj_encoder_type={"kind": "lstm", "d_hidden": 8, "d_output": 8})
    assert planned.config.traj_encoder.d_hidden == 8
