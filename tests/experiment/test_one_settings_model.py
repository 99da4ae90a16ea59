"""One settings model: the Python API, the CLI and `amago config show` resolve the same settings to one config."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from amago import Experiment
from amago.from_amago.flat import AMAGO_NAMES, FlatNameError, flat_names, flat_to_tree
from amago_core.cli.app import app
from amago_core.config.experiment import ExperimentConfig

runner = CliRunner()

# The same experiment twice: AMAGO's flat keywords, and the command line.
PYTHON_SETTINGS = {
    "env": "frozen-lake",
    "traj_encoder_type": "gru",
    "agent_type": "multitask",
    "run_name": "same",
    "ckpt_base_dir": "runs",
    "seed": 7,
    "max_seq_len": 64,
    "traj_save_len": 64,
    "learning_rate": 3e-4,
    "batch_size": 12,
    "parallel_actors": 3,
    "val_timesteps_per_epoch": 70,
    "sample_actions": False,
    "critic_loss_weight": 5.0,
    "epochs": 3,
}
CLI_ARGS = [
    "--env",
    "frozen-lake",
    "--traj-encoder",
    "gru",
    "--agent",
    "multitask",
    "--name",
    "same",
    "--seed",
    "7",
    "-o",
    "run.ckpt_base_dir=runs",
    "-o",
    "run.max_seq_len=64",
    "-o",
    "replay.traj_save_len=64",
    "-o",
    "optim.learning_rate=3e-4",
    "-o",
    "optim.batch_size=12",
    "-o",
    "rollout.parallel_actors=3",
    "-o",
    "schedule.val_timesteps_per_epoch=70",
    "-o",
    "rollout.sample_actions_val=false",
    "-o",
    "agent.critic_loss_weight=5.0",
    "-o",
    "schedule.epochs=3",
]


@pytest.fixture
def no_amago_environment(monkeypatch):
    for name in [n for n in __import__("os").environ if n.startswith("AMAGO_") and "__" in n]:
        monkeypatch.delenv(name)


@pytest.mark.usefixtures("no_amago_environment")
def test_the_python_api_and_the_cli_resolve_the_same_settings_to_the_same_config():
    shown = runner.invoke(app, ["config", "show", *CLI_ARGS])
    assert shown.exit_code == 0, shown.output
    experiment = Experiment(**PYTHON_SETTINGS)
    assert experiment.config.model_dump(mode="json") == json.loads(shown.stdout)
    # The suite's preset sits under both: frozen-lake's grouped batches reach the Python API too.
    assert experiment.config.optim.length_group_batches == 8
    assert experiment.config.agent.critic_loss_weight == 5.0


@pytest.mark.usefixtures("no_amago_environment")
@pytest.mark.parametrize(
    "args",
    [
        [],
        CLI_ARGS,
        [
            "--env",
            "tmaze-active",
            "--tstep-encoder",
            "ff",
            "--exploration",
            "bilevel",
            "-o",
            "optim.l2_coeff=0",
        ],
        ["-o", "schedule.epochs=5", "--mode", "learn", "--quiet"],
    ],
)
def test_config_show_prints_byte_for_byte_what_run_dry_run_prints(args):
    shown = runner.invoke(app, ["config", "show", *args])
    dry_run = runner.invoke(app, ["run", *args, "--dry-run"])
    assert shown.exit_code == dry_run.exit_code == 0, (shown.output, dry_run.output)
    assert shown.stdout == dry_run.stdout


def test_config_show_and_run_refuse_the_same_bad_input_with_the_same_line():
    for command in (["config", "show"], ["run", "--dry-run"]):
        result = runner.invoke(app, [*command, "--env", "tmazee-passive"])
        assert result.exit_code == 2
        assert "Did you mean 'tmaze-passive'?" in result.stderr


def test_a_broken_preset_is_an_error_that_names_the_suite(fake_distribution):
    fake_distribution(
        "amago-plugin-broken-preset",
        entry_points={"amago.env_suites": {"grid": "broken_preset.specs:SPEC"}},
        modules={
            "broken_preset/__init__.py": "",
            "broken_preset/specs.py": '''
from typing import Literal
from amago_core.config import EnvSuiteConfig
from amago_core.plugins import ComponentSpec

class GridConfig(EnvSuiteConfig):
    kind: Literal["grid"] = "grid"
    """Registered name."""

SPEC = ComponentSpec(
    name="grid", group="amago.env_suites", summary="grid", config=GridConfig, factory="broken_preset.specs:GridConfig",
    presets={"*": {"optim": {"batch_sise": 7}}},
)
''',
        },
    )
    result = runner.invoke(app, ["config", "show", "--env", "grid"])
    assert result.exit_code == 2
    assert "env suite 'grid' ships a broken preset" in result.stderr
    assert "optim.batch_sise" in result.stderr
    assert "amago-plugin-broken-preset" in result.stderr
    assert result.stderr.count("\n") == 1


def test_every_flat_name_maps_to_one_config_field():
    table = flat_names()
    assert table["learning_rate"] == ("optim", "learning_rate")
    assert table["run_name"] == ("run", "name")
    assert table["sample_actions"] == ("rollout", "sample_actions_val")
    for name, path in table.items():
        node = ExperimentConfig.model_fields[path[0]]
        if len(path) == 2 and name not in AMAGO_NAMES:
            assert path[1] in node.annotation.model_fields, name
    assert flat_to_tree({"epochs": 3, "run_name": "x"}) == {"schedule": {"epochs": 3}, "run": {"name": "x"}}
    chosen = {"kind": "multitask", "critic_loss_weight": 5.0}
    assert flat_to_tree({"agent_type": "multitask", "critic_loss_weight": 5.0}) == {"agent": chosen}
    assert flat_to_tree({"critic_loss_weight": 5.0, "agent_type": "multitask"}) == {"agent": chosen}


def test_an_unknown_setting_fails_with_did_you_mean(tmp_path):
    with pytest.raises(
        FlatNameError, match=r"unknown setting 'learning_rat'\..*Did you mean 'learning_rate'"
    ):
        Experiment(env="tmaze-passive", learning_rat=1e-3, ckpt_base_dir=tmp_path)


def test_settings_read_as_attributes_and_change_only_through_apply_settings(tmp_path):
    experiment = Experiment(env="tmaze-passive", ckpt_base_dir=tmp_path, batch_size=5, run_name="attrs")
    assert experiment.batch_size == experiment.config.optim.batch_size == 5
    # Written as an attribute, a setting is refused in one line that names the keyword to pass instead.
    with pytest.raises(AttributeError, match=r"pass epochs=\.\.\. to Experiment\(\.\.\.\)"):
        experiment.epochs = 9
    assert experiment.config.schedule.epochs != 9
    experiment.apply_settings(epochs=9)
    assert experiment.config.schedule.epochs == 9
    with pytest.raises(ValueError, match=r"schedule\.epochs"):
        experiment.apply_settings(epochs=0)  # validated like any other source
    experiment.apply_settings(traj_encoder_type="gru")
    assert experiment.components.traj_encoder.name == "rnn"
    instance_names = set(vars(experiment))
    assert not instance_names & set(flat_names()), "an instance attribute would hide a setting"


def _tmaze():
    from amago_core.rollout import AMAGOEnv
    from amago_envs.suites.tmaze import TMaze

    return AMAGOEnv(TMaze(corridor_length=3), env_name="TMaze")


def test_the_experiment_defaults_are_the_config_defaults(tmp_path):
    # They drifted when Experiment had fields of its own (val_timesteps_per_epoch was 1,000 there, 10,000 here).
    experiment = Experiment(make_train_env=_tmaze, ckpt_base_dir=tmp_path, run_name="defaults")
    assert experiment.config.model_dump(exclude={"run"}) == ExperimentConfig().resolved().model_dump(
        exclude={"run"}
    )
    assert experiment.config.rollout.async_env_mp_context == "forkserver"
    amago_style = Experiment(make_train_env=_tmaze, async_env_mp_context=None, run_name="d2")
    assert amago_style.config.rollout.async_env_mp_context == "forkserver"  # AMAGO's None
