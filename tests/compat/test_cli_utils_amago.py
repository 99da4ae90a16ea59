"""AMAGO's ``amago.cli_utils`` in amago: its flags, ``use_config``, the ``switch_*`` helpers and
``create_experiment_from_cli``.

The flags are compared with what AMAGO's own ``add_common_cli`` put on a parser, recorded by AMAGO's interpreter as
a separate program (``fixtures/record_amago_cli.py``, into ``fixtures/amago-3.3.0-common-cli.json``); where the
reference venv exists, the program is run again and must give the same record.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import gin
import pytest

import amago
from amago import cli_utils
from amago.envs import AMAGOEnv
from amago.envs.exploration import EpsilonGreedy
from amago.from_amago import bindings
from amago_envs.suites.tmaze import TMaze

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = HERE / "fixtures"
RECORD = FIXTURES / "amago-3.3.0-common-cli.json"
RECORDER = FIXTURES / "record_amago_cli.py"
REFERENCE_PYTHON = REPO / ".venv-amago-ref" / "bin" / "python"
RECORDED = json.loads(RECORD.read_text(encoding="utf-8"))


@gin.configurable
class TMazeExploration(EpsilonGreedy):
    """AMAGO example 04's pattern: a script's own gin-configurable subclass of AMAGO's ``EpsilonGreedy``."""

    def __init__(self, env: Any, horizon: int = gin.REQUIRED, eps_start: float = 1.0, **kwargs: Any) -> None:
        self.horizon = horizon
        super().__init__(env, eps_start=eps_start, **kwargs)


@pytest.fixture(autouse=True)
def _fresh_bindings():
    bindings.clear_bindings()
    gin.clear_config()
    yield
    bindings.clear_bindings()
    gin.clear_config()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    returned = cli_utils.add_common_cli(parser)
    assert returned is parser
    return parser


def _action_kind(action: argparse.Action) -> str:
    return {argparse._StoreAction: "store", argparse._StoreTrueAction: "store_true"}.get(
        type(action), type(action).__name__
    )


# ---- add_common_cli -----------------------------------------------------------------------------------------


def test_add_common_cli_has_amagos_flags_types_and_defaults():
    ours = {action.dest: action for action in _parser()._actions}
    assert list(ours) == [flag["dest"] for flag in RECORDED["flags"]]
    for flag in RECORDED["flags"]:
        action = ours[flag["dest"]]
        assert action.option_strings == flag["option_strings"]
        assert action.default == flag["default"], flag["dest"]
        assert (None if action.type is None else action.type.__name__) == flag["type"], flag["dest"]
        assert (action.nargs, action.required, _action_kind(action)) == (
            flag["nargs"],
            flag["required"],
            flag["action"],
        ), flag["dest"]
        if flag["choices"] is None:
            assert action.choices is None, flag["dest"]
        elif flag["dest"] in ("agent_type", "traj_encoder"):
            # registry names: every name AMAGO had is registered here too (amago adds some)
            assert set(flag["choices"]) <= set(action.choices), flag["dest"]
        else:
            assert sorted(action.choices) == flag["choices"], flag["dest"]


@pytest.mark.skipif(not REFERENCE_PYTHON.exists(), reason="no AMAGO reference venv (.venv-amago-ref)")
def test_the_recorded_flags_are_what_amagos_own_program_records_now():
    result = subprocess.run(
        [str(REFERENCE_PYTHON), str(RECORDER)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=300,
    )
    assert json.loads(result.stdout) == RECORDED


def test_add_common_cli_parses_an_amago_command_line():
    args = _parser().parse_args(
        ["--run_name", "x", "--buffer_dir", "d", "--epochs", "2", "--traj_encoder", "rnn", "--no_log"]
    )
    assert (args.run_name, args.buffer_dir, args.epochs, args.traj_encoder, args.no_log) == (
        "x",
        "d",
        2,
        "rnn",
        True,
    )
    assert (args.mode, args.parallel_actors, args.dset_max_size, args.configs) == ("both", 12, 20_000, None)
    with pytest.raises(SystemExit):
        _parser().parse_args(["--run_name", "x", "--buffer_dir", "d", "--traj_encoder", "not-an-encoder"])


# ---- switch_* ----------------------------------------------------------------------------------------------


def test_switch_traj_encoder_writes_amagos_bindings_and_returns_the_class():
    from amago.nets.traj_encoders import GRUTrajEncoder, MambaTrajEncoder, TformerTrajEncoder

    config: dict[str, Any] = {}
    chosen = cli_utils.switch_traj_encoder(config, arch="transformer", memory_size=128, layers=3, n_heads=4)
    prefix = "amago.nets.traj_encoders.TformerTrajEncoder"
    assert chosen is TformerTrajEncoder
    assert config == {
        f"{prefix}.d_model": 128,
        f"{prefix}.d_ff": 512,
        f"{prefix}.n_layers": 3,
        f"{prefix}.n_heads": 4,
    }

    config = {}
    assert cli_utils.switch_traj_encoder(config, "rnn", 64, 2) is GRUTrajEncoder
    prefix = "amago.nets.traj_encoders.GRUTrajEncoder"
    assert config == {f"{prefix}.n_layers": 2, f"{prefix}.d_output": 64, f"{prefix}.d_hidden": 64}

    config = {}
    assert cli_utils.switch_traj_encoder(config, "mamba", 32, 1, d_model=48) is MambaTrajEncoder
    assert config == {
        "amago.nets.traj_encoders.MambaTrajEncoder.d_model": 48,
        "amago.nets.traj_encoders.MambaTrajEncoder.n_layers": 1,
    }


def test_switch_traj_encoder_of_a_class_without_memory_size_is_refused_by_use_config_as_gin_did():
    config: dict[str, Any] = {}
    cli_utils.switch_traj_encoder(config, "identity", 64, 2)
    assert config == {
        "amago.nets.traj_encoders.IdentityTrajEncoder.memory_size": 64,
        "amago.nets.traj_encoders.IdentityTrajEncoder.n_layers": 2,
    }
    with pytest.raises(ValueError, match="IdentityTrajEncoder has no parameter 'memory_size'") as raised:
        cli_utils.use_config(config)
    assert "\n" not in str(raised.value)


def test_switch_helpers_for_tstep_encoders_agents_and_explorations():
    from amago.agent import MultiTaskAgent
    from amago.nets.tstep_encoders import CNNTstepEncoder

    config: dict[str, Any] = {}
    assert cli_utils.switch_tstep_encoder(config, arch="cnn", cnn_type="impala") is CNNTstepEncoder
    assert cli_utils.switch_agent(config, "multitask", num_critics=6, gamma=0.998) is MultiTaskAgent
    assert (
        cli_utils.switch_exploration(config, "bilevel", steps_anneal=10)
        is amago.envs.exploration.BilevelEpsilonGreedy
    )
    assert config == {
        "amago.nets.tstep_encoders.CNNTstepEncoder.cnn_type": "impala",
        "amago.agent.MultiTaskAgent.num_critics": 6,
        "amago.agent.MultiTaskAgent.gamma": 0.998,
        "amago.envs.exploration.BilevelEpsilonGreedy.steps_anneal": 10,
    }
    with pytest.raises(KeyError, match="no-such-agent"):
        cli_utils.switch_agent({}, "no-such-agent")


def test_a_component_amago_added_is_switched_to_by_name_and_takes_its_options():
    config: dict[str, Any] = {}
    chosen = cli_utils.switch_exploration(config, "tmaze", corridor_length=9)
    assert chosen == "tmaze"  # built by a function: the name picks it
    assert config == {"amago_envs.exploration.wrappers.build_tmaze.corridor_length": 9}
    cli_utils.use_config(config)
    assert bindings.pending_settings() == {"exploration.kind": "tmaze", "exploration.corridor_length": 9}
    experiment = amago.Experiment(env="tmaze-passive", exploration_wrapper_type=chosen)
    assert (experiment.config.exploration.kind, experiment.config.exploration.corridor_length) == ("tmaze", 9)


def test_an_option_a_component_amago_added_does_not_have_is_one_line():
    config: dict[str, Any] = {}
    cli_utils.switch_traj_encoder(config, "lstm", 64, 2)
    with pytest.raises(ValueError, match="has no option 'memory_size'") as raised:
        cli_utils.use_config(config)
    assert "\n" not in str(raised.value)
    assert "amago show traj-encoders lstm" in str(raised.value)


# ---- use_config ---------------------------------------------------------------------------------------------


def test_use_config_maps_amagos_bindings_onto_the_next_experiments_config():
    from amago.nets.traj_encoders import TformerTrajEncoder

    cli_utils.use_config(
        {
            "TformerTrajEncoder.n_heads": 4,
            "amago.nets.traj_encoders.TformerTrajEncoder.d_model": 32,
            "TformerTrajEncoder.pos_emb": "learnable",
            "GRUTrajEncoder.d_hidden": 7,  # not the encoder used: no effect, as in AMAGO
            "Agent.gamma": 0.97,
            "binary_filter.threshold": 1e-3,
            "amago.nets.policy_dists.Discrete.clip_prob_low": 1e-6,
            "EpsilonGreedy.steps_anneal": 123,
            "Experiment.learning_rate": 3e-4,
            "Experiment.l2_coeff": 5e-4,
            "Experiment.ckpt_interval": None,
            "DiskTrajDataset.dset_max_size": 77,
        }
    )
    experiment = amago.Experiment(
        env="tmaze-passive", traj_encoder_type=TformerTrajEncoder, learning_rate=1e-3
    )
    config = experiment.config
    assert (config.traj_encoder.kind, config.traj_encoder.n_heads, config.traj_encoder.d_model) == (
        "transformer",
        4,
        32,
    )
    assert config.traj_encoder.pos_emb == "learnable"
    assert (config.agent.kind, config.agent.gamma) == ("agent", 0.97)
    assert config.agent.fbc_filter.threshold == 1e-3
    assert config.agent.discrete_dist.clip_prob_low == 1e-6
    assert (config.exploration.kind, config.exploration.steps_anneal) == ("egreedy", 123)
    assert config.optim.learning_rate == 1e-3  # the keyword wins over the binding, as in AMAGO
    assert config.optim.l2_coeff == 5e-4
    assert config.schedule.ckpt_interval is None  # a binding of None sets None
    assert config.replay.dset_max_size == 77
    # the bindings stay for the next experiment (AMAGO's scripts build one per trial)...
    again = amago.Experiment(env="tmaze-passive", traj_encoder_type="rnn")
    assert (again.config.traj_encoder.kind, again.config.traj_encoder.d_hidden) == ("rnn", 7)
    assert again.config.agent.gamma == 0.97
    # ...until they are cleared
    bindings.clear_bindings()
    assert amago.Experiment(env="tmaze-passive").config.agent.gamma != 0.97


def test_the_picked_agent_decides_which_bindings_apply():
    from amago.agent import MultiTaskAgent

    cli_utils.use_config(
        {"Agent.gamma": 0.91, "MultiTaskAgent.gamma": 0.92, "NCriticsTwoHot.output_bins": 40}
    )
    experiment = amago.Experiment(env="tmaze-passive", agent_type=MultiTaskAgent)
    assert (experiment.config.agent.kind, experiment.config.agent.gamma) == ("multitask", 0.92)
    assert experiment.config.agent.output_bins == 40
    plain = amago.Experiment(env="tmaze-passive", agent_type="agent")
    assert (plain.config.agent.kind, plain.config.agent.gamma) == ("agent", 0.91)


def test_use_config_reads_gin_files_after_the_dict_and_hands_own_bindings_to_gin(tmp_path):
    path = tmp_path / "extra.gin"
    path.write_text(
        "HORIZON = 11\n"
        "TformerTrajEncoder.n_layers = 5\n"
        "Agent.gamma = 0.95\n"
        "TMazeExploration.horizon = %HORIZON\n",
        encoding="utf-8",
    )
    cli_utils.use_config({"Agent.gamma": 0.9, "TformerTrajEncoder.n_layers": 2}, [str(path)])
    assert bindings.pending_settings()["agent.gamma"] == 0.95  # the file comes after the dict
    assert bindings.pending_settings()["traj_encoder.n_layers"] == 5
    wrapped = TMazeExploration(AMAGOEnv(TMaze(corridor_length=3), env_name="tmaze"))
    assert wrapped.horizon == 11


def test_a_scripts_own_gin_configurable_subclass_gets_its_binding():
    cli_utils.use_config({"TMazeExploration.horizon": 7, "EpsilonGreedy.eps_start": 0.5})
    wrapped = TMazeExploration(AMAGOEnv(TMaze(corridor_length=3), env_name="tmaze"))
    assert wrapped.horizon == 7
    experiment = amago.Experiment(env="tmaze-passive", exploration_wrapper_type=TMazeExploration)
    built = (
        experiment.components.exploration.cls
    )  # a subclass stays the script's class, built as AMAGO built it
    assert built.cls is TMazeExploration
    assert built(AMAGOEnv(TMaze(corridor_length=3), env_name="tmaze"), seed=0).horizon == 7


def test_use_config_finalize_locks_the_bindings_like_gin():
    cli_utils.use_config({"Agent.gamma": 0.9})
    with pytest.raises(RuntimeError, match="finalize=False") as raised:
        cli_utils.use_config({"Agent.tau": 0.01})
    assert "\n" not in str(raised.value)
    with pytest.raises(RuntimeError):  # gin itself was finalized too
        gin.bind_parameter("TMazeExploration.horizon", 3)


@pytest.mark.parametrize(
    ("binding", "value", "says"),
    [
        ("TformerTrajEncoder.not_a_parameter", 1, "TformerTrajEncoder has no parameter 'not_a_parameter'"),
        ("Agent.pass_obs_keys_to_actor", ["obs"], "no counterpart in amago"),
        ("amago.nets.transformer.FlashAttention.window_size", "wide", "not translated"),
        ("NotAConfigurable.x", 1, "nor a @gin.configurable of this script"),
        ("no_dot", 1, "is not a gin binding"),
    ],
)
def test_a_binding_amago_cannot_honour_is_one_line_and_keeps_nothing(binding, value, says):
    cli_utils.use_config({"Agent.gamma": 0.9}, finalize=False)
    before = bindings.pending_settings()
    with pytest.raises(ValueError, match="use_config") as raised:
        cli_utils.use_config({"Agent.tau": 0.01, binding: value})
    message = str(raised.value)
    assert says in message
    assert binding in message
    assert "\n" not in message
    assert bindings.pending_settings() == before


def test_a_binding_that_took_no_effect_in_amago_either_is_one_warning_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cli_utils.use_config({"Agent.max_seq_len": 10})
    lines = [str(w.message) for w in caught if issubclass(w.category, bindings.BindingWarning)]
    assert len(lines) == 1
    assert lines[0].startswith("use_config: Agent.max_seq_len: set by the run")


def test_own_bindings_without_gin_installed_name_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gin", None)  # `import gin` now fails as if gin-config were missing
    with pytest.raises(ImportError, match=r'pip install "amago\[gin\]"') as raised:
        cli_utils.use_config({"TMazeExploration.horizon": 3}, finalize=False)
    assert "\n" not in str(raised.value)
    cli_utils.use_config({"Agent.gamma": 0.9})  # AMAGO's own classes need no gin
    assert bindings.pending_settings()["agent.gamma"] == 0.9


# ---- create_experiment_from_cli and the async modes --------------------------------------------------------


def _tiny_args(tmp_path: Path, *more: str) -> argparse.Namespace:
    return _parser().parse_args(
        [
            "--run_name",
            "tiny",
            "--buffer_dir",
            str(tmp_path),
            "--epochs",
            "1",
            "--no_log",
            "--parallel_actors",
            "2",
            "--env_mode",
            "sync",
            "--timesteps_per_epoch",
            "8",
            "--batches_per_epoch",
            "2",
            "--batch_size",
            "4",
            "--dloader_workers",
            "0",
            "--val_interval",
            "1",
            "--ckpt_interval",
            "3",
            "--dset_max_size",
            "55",
            "--start_learning_at_epoch",
            "0",
            *more,
        ]
    )


def _make_env() -> AMAGOEnv:
    return AMAGOEnv(TMaze(corridor_length=3), env_name="TMaze-H3")


def test_create_experiment_from_cli_maps_amagos_flags_and_trains(tmp_path):
    args = _tiny_args(tmp_path)
    config: dict[str, Any] = {}
    traj_encoder_type = cli_utils.switch_traj_encoder(
        config, args.traj_encoder, memory_size=16, layers=1, n_heads=2
    )
    tstep_encoder_type = cli_utils.switch_tstep_encoder(config, "ff", n_layers=1, d_hidden=16, d_output=16)
    agent_type = cli_utils.switch_agent(config, args.agent_type, gamma=0.9)
    cli_utils.use_config(config, args.configs)
    experiment = cli_utils.create_experiment_from_cli(
        args,
        make_train_env=_make_env,
        make_val_env=_make_env,
        max_seq_len=4,
        traj_save_len=4,
        group_name="tiny-group",
        run_name="tiny_trial_0",
        tstep_encoder_type=tstep_encoder_type,
        traj_encoder_type=traj_encoder_type,
        agent_type=agent_type,
        val_timesteps_per_epoch=4,
        sample_actions_train=False,
    )
    assert isinstance(experiment, amago.Experiment)
    c = experiment.config
    assert (c.run.name, c.run.ckpt_base_dir, c.run.max_seq_len) == ("tiny_trial_0", tmp_path, 4)
    assert (c.replay.dset_root, c.replay.dset_name, c.replay.dset_max_size, c.replay.traj_save_len) == (
        tmp_path,
        "tiny_trial_0",
        55,
        4,
    )
    assert (c.logging.log_to_wandb, c.logging.wandb_group_name) == (False, "tiny-group")
    assert (c.schedule.epochs, c.schedule.train_timesteps_per_epoch, c.schedule.train_batches_per_epoch) == (
        1,
        8,
        2,
    )
    assert (c.schedule.val_interval, c.schedule.ckpt_interval, c.schedule.start_learning_at_epoch) == (
        1,
        3,
        0,
    )
    assert (c.rollout.parallel_actors, c.rollout.env_mode, c.rollout.sample_actions_train) == (
        2,
        "sync",
        False,
    )
    assert (c.optim.batch_size, c.optim.mixed_precision, c.distributed.dloader_workers) == (4, "no", 0)
    assert (c.traj_encoder.kind, c.traj_encoder.d_model, c.traj_encoder.n_heads) == ("transformer", 16, 2)
    assert (c.tstep_encoder.kind, c.tstep_encoder.d_output, c.agent.gamma) == ("ff", 16, 0.9)
    assert c.exploration.kind == "egreedy"  # AMAGO's default exploration
    experiment = cli_utils.switch_async_mode(experiment, args.mode)
    experiment.start()
    experiment.learn()
    assert experiment.epoch >= 0
    assert (tmp_path / "tiny_trial_0" / "buffer").is_dir()


def test_create_experiment_from_cli_takes_amago_names_and_other_flags(tmp_path):
    args = _tiny_args(tmp_path, "--mixed_precision", "bf16", "--env_mode", "async")
    args.no_log = False
    experiment = cli_utils.create_experiment_from_cli(
        args,
        make_train_env=_make_env,
        make_val_env=_make_env,
        max_seq_len=4,
        group_name="g",
        run_name="named",
        tstep_encoder_type="ff",
        traj_encoder_type="rnn",
        agent_type="multitask",
        exploration_wrapper_type="bilevel",
        val_timesteps_per_epoch=4,
    )
    c = experiment.config
    assert (c.traj_encoder.kind, c.agent.kind, c.exploration.kind) == ("rnn", "multitask", "bilevel")
    assert (c.optim.mixed_precision, c.rollout.env_mode, c.logging.log_to_wandb) == ("bf16", "async", True)
    assert c.replay.traj_save_len == 10**10  # AMAGO's "whole trajectories"


def test_create_experiment_from_cli_refuses_a_setting_given_twice_and_builds_subclasses(tmp_path):
    class MyExperiment(amago.Experiment):
        pass

    common = dict(
        make_train_env=_make_env,
        make_val_env=_make_env,
        max_seq_len=4,
        group_name="g",
        run_name="r",
        tstep_encoder_type="ff",
        traj_encoder_type="ff",
        agent_type="agent",
        val_timesteps_per_epoch=4,
    )
    args = _tiny_args(tmp_path)
    with pytest.raises(TypeError, match="batch_size") as raised:
        cli_utils.create_experiment_from_cli(args, batch_size=8, **common)
    assert "\n" not in str(raised.value)
    built = cli_utils.create_experiment_from_cli(args, experiment_type=MyExperiment, **common)
    assert type(built) is MyExperiment


def test_learn_only_and_collect_only_set_the_run_mode():
    experiment = amago.Experiment(env="tmaze-passive")
    assert cli_utils.make_experiment_learn_only(experiment) is experiment
    assert experiment.config.run.mode == "learn"
    assert cli_utils.make_experiment_collect_only(experiment).config.run.mode == "collect"
    assert cli_utils.switch_async_mode(experiment, "both").config.run.mode == "both"


def test_classes_given_for_slots_take_the_configs_options():
    from amago.nets.traj_encoders import GRUTrajEncoder

    experiment = amago.Experiment(
        env="tmaze-passive",
        traj_encoder_type=GRUTrajEncoder,
        exploration_wrapper_type=EpsilonGreedy,
        config=None,
    )
    assert experiment.classes == {}  # by name: the config's options apply, as use_config's bindings do
    assert (experiment.config.traj_encoder.kind, experiment.config.exploration.kind) == ("rnn", "egreedy")
    assert not math.isnan(experiment.config.exploration.eps_start)


@pytest.mark.slow
def test_ckpt_flag_reopens_the_run_and_loads_that_epoch_and_args_give_the_mode(tmp_path):
    def build(*more: str) -> amago.Experiment:
        args = _tiny_args(tmp_path, "--ckpt_interval", "1", *more)
        experiment = cli_utils.create_experiment_from_cli(
            args,
            make_train_env=_make_env,
            make_val_env=_make_env,
            max_seq_len=4,
            traj_save_len=4,
            group_name="g",
            run_name="again",
            tstep_encoder_type="ff",
            traj_encoder_type="ff",
            agent_type="agent",
            val_timesteps_per_epoch=4,
        )
        # AMAGO's examples 10 and 11 pass the parsed args
        return cli_utils.switch_async_mode(experiment, args)

    first = build()
    first.start()
    try:
        first.learn()
    finally:
        first.close()
    again = build("--ckpt", "0", "--mode", "both")
    assert again.config.run.mode == "both"
    again.start()  # the folder holds the first run: --ckpt opens it, as AMAGO's scripts did
    try:
        again.load_checkpoint(0)
        assert again.epoch >= 0
    finally:
        again.close()
    with pytest.raises(Exception, match="already holds a run"):
        build().start()
