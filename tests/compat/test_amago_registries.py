"""AMAGO's registries work in a script: ``register_*`` decorators, ``get_*_cls`` and ``list_registered_*``.

Each decorated class lands in the running process's registries next to the installed plugins (see
tests/core/test_in_process_registration.py for what the name then does in a run, the CLI and a run's record).
"""

from __future__ import annotations

import importlib

import pytest
import torch
from torch import nn

from amago_agents.agent import Agent
from amago_core.plugins import (
    GROUPS,
    DuplicateComponentError,
    UnknownComponentError,
    in_process,
    reset_registries,
)
from amago_envs.exploration.wrappers import EpsilonGreedy
from amago_nets.base import TrajEncoder, TstepEncoder
from amago_nets.traj_rnn import GRUTrajEncoder
from amago_nets.tstep_ff import FFTstepEncoder

FUNCTIONS = {
    # AMAGO's kind -> (its plural in list_registered_*, an installed name, its class or None for a function)
    "traj_encoder": ("traj_encoders", "gru", GRUTrajEncoder),
    "tstep_encoder": ("tstep_encoders", "ff", FFTstepEncoder),
    "agent": ("agents", "agent", Agent),
    "exploration": ("explorations", "egreedy", None),
}

EXPORTED_FROM = {
    # Where AMAGO 3.3.0 exported each kind's three functions.
    "traj_encoder": ("amago", "amago.nets", "amago.nets.traj_encoders"),
    "tstep_encoder": ("amago", "amago.nets", "amago.nets.tstep_encoders"),
    "agent": ("amago", "amago.agent"),
    "exploration": ("amago", "amago.envs", "amago.envs.exploration"),
}


class ScriptTrajEncoder(TrajEncoder):
    """A trajectory encoder as an AMAGO script writes one: built from the inferred context alone."""

    def __init__(self, tstep_dim, max_seq_len):
        super().__init__(tstep_dim=tstep_dim, max_seq_len=max_seq_len)
        self.layer = nn.Linear(tstep_dim, 8)

    @property
    def emb_dim(self) -> int:
        return 8

    def forward(self, seq, time_idxs, hidden_state=None):
        return torch.tanh(self.layer(seq)), hidden_state


class ScriptTstepEncoder(TstepEncoder):
    """A timestep encoder of a script."""

    def __init__(self, obs_space, rl2_space):
        super().__init__(obs_space=obs_space, rl2_space=rl2_space)
        self.layer = nn.Linear(obs_space["observation"].shape[-1] + rl2_space.shape[-1], 4)

    @property
    def emb_dim(self) -> int:
        return 4

    def inner_forward(self, obs, rl2s):
        return torch.tanh(self.layer(torch.cat((obs["observation"].float(), rl2s), dim=-1)))


class ScriptAgent(Agent):
    """An agent subclass of a script."""


class ScriptExploration(EpsilonGreedy):
    """An exploration subclass of a script."""


SCRIPT_CLASSES = {
    "traj_encoder": ScriptTrajEncoder,
    "tstep_encoder": ScriptTstepEncoder,
    "agent": ScriptAgent,
    "exploration": ScriptExploration,
}


@pytest.fixture(autouse=True)
def forget_registrations():
    """What a test registers in this process is forgotten after it."""
    before = {group: set(in_process.specs(group)) for group in GROUPS}
    yield
    for group in GROUPS:
        for name in set(in_process.specs(group)) - before[group]:
            in_process.remove(group, name)


def _functions(kind: str, module: str = "amago"):
    plural = FUNCTIONS[kind][0]
    shim = importlib.import_module(module)
    return (
        getattr(shim, f"register_{kind}"),
        getattr(shim, f"get_{kind}_cls"),
        getattr(shim, f"list_registered_{plural}"),
    )


@pytest.mark.parametrize(
    ("kind", "module"), [(kind, module) for kind, modules in EXPORTED_FROM.items() for module in modules]
)
def test_every_module_of_amago_that_exported_them_has_them(kind, module):
    register, get_cls, list_registered = _functions(kind, module)
    assert (register, get_cls, list_registered) == _functions(kind)
    plural = FUNCTIONS[kind][0]
    assert {f"register_{kind}", f"get_{kind}_cls", f"list_registered_{plural}"} <= set(
        dir(importlib.import_module(module))
    )
    namespace: dict[str, object] = {}
    exec(f"from {module} import register_{kind}, get_{kind}_cls, list_registered_{plural}", namespace)
    assert namespace[f"register_{kind}"] is register


@pytest.mark.parametrize("kind", sorted(FUNCTIONS))
def test_a_decorated_class_is_returned_listed_and_found(kind):
    register, get_cls, list_registered = _functions(kind)
    cls = SCRIPT_CLASSES[kind]
    name = f"script_{kind}"
    assert name not in list_registered()
    assert register(name)(cls) is cls  # AMAGO's decorator hands the class back unchanged
    assert get_cls(name) is cls
    listed = list_registered()
    assert name in listed
    assert FUNCTIONS[kind][1] in listed  # the installed components are listed too


@pytest.mark.parametrize("kind", sorted(FUNCTIONS))
def test_get_cls_of_an_installed_component(kind):
    _, get_cls, _ = _functions(kind)
    installed, cls = FUNCTIONS[kind][1], FUNCTIONS[kind][2]
    if cls is not None:
        assert get_cls(installed) is cls
        return
    with pytest.raises(TypeError) as raised:
        get_cls(installed)
    message = str(raised.value)
    assert "\n" not in message
    assert "build_egreedy, not a class" in message
    assert "Experiment(exploration_wrapper_type='egreedy')" in message


@pytest.mark.parametrize("kind", sorted(FUNCTIONS))
def test_get_cls_of_an_unknown_name_is_a_key_error_with_a_suggestion(kind):
    register, get_cls, _ = _functions(kind)
    register(f"script_{kind}")(SCRIPT_CLASSES[kind])
    with pytest.raises(KeyError) as raised:
        get_cls(f"script_{kind}x")
    assert isinstance(raised.value, UnknownComponentError)
    assert f"Did you mean 'script_{kind}'?" in str(raised.value)


def test_the_same_class_registered_again_is_a_no_op():
    from amago import get_traj_encoder_cls, list_registered_traj_encoders, register_traj_encoder

    register_traj_encoder("script_gru")(ScriptTrajEncoder)
    register_traj_encoder("script_gru")(ScriptTrajEncoder)
    register_traj_encoder("Script-GRU")(ScriptTrajEncoder)  # AMAGO-ish spellings name the same entry
    assert get_traj_encoder_cls("script_gru") is ScriptTrajEncoder
    assert list_registered_traj_encoders().count("script_gru") == 1


def test_a_name_of_an_installed_plugin_is_refused_naming_both():
    from amago import register_traj_encoder

    for taken in ("rnn", "gru"):  # a canonical name and an alias
        with pytest.raises(DuplicateComponentError) as raised:
            register_traj_encoder(taken)(ScriptTrajEncoder)
        message = str(raised.value)
        assert "\n" not in message
        assert "amago-nets" in message
        assert f"{__name__}:ScriptTrajEncoder" in message


def test_another_class_under_a_registered_name_is_refused_naming_both():
    from amago import get_traj_encoder_cls, register_traj_encoder

    register_traj_encoder("script_enc")(ScriptTrajEncoder)
    with pytest.raises(DuplicateComponentError) as raised:
        register_traj_encoder("script_enc")(GRUTrajEncoder)
    message = str(raised.value)
    assert "\n" not in message
    assert f"{__name__}:ScriptTrajEncoder" in message
    assert "amago_nets.traj_rnn:GRUTrajEncoder" in message
    assert get_traj_encoder_cls("script_enc") is ScriptTrajEncoder


def test_a_class_defined_again_under_its_own_path_replaces_the_old_one():
    # A notebook cell run twice, or a reloaded module: the same module:qualname, a new class object.
    from amago import get_traj_encoder_cls, register_traj_encoder

    def define():
        class Redefined(ScriptTrajEncoder):
            pass

        return Redefined

    first, second = define(), define()
    register_traj_encoder("script_redefined")(first)
    register_traj_encoder("script_redefined")(second)
    assert get_traj_encoder_cls("script_redefined") is second


def test_registrations_survive_a_rescan():
    from amago import get_agent_cls, list_registered_agents, register_agent

    register_agent("script_agent")(ScriptAgent)
    reset_registries()
    assert "script_agent" in list_registered_agents()
    assert get_agent_cls("script_agent") is ScriptAgent


def test_the_decorator_without_a_name_says_how_to_call_it():
    from amago import register_traj_encoder

    with pytest.raises(
        TypeError, match=r'register_traj_encoder takes the name first: @register_traj_encoder\("my_name"\)'
    ):
        register_traj_encoder(ScriptTrajEncoder)  # type: ignore[arg-type]


def test_a_name_that_is_no_component_name_is_refused():
    from amago import register_tstep_encoder

    with pytest.raises(ValueError, match="a name is letters, digits and '_'"):
        register_tstep_encoder("my encoder!")(ScriptTstepEncoder)


@pytest.mark.slow
def test_an_experiment_of_four_registered_names_trains(tmp_path):
    import json

    import amago

    for kind, cls in SCRIPT_CLASSES.items():
        _functions(kind)[0](f"script_{kind}")(cls)
    experiment = amago.Experiment(
        env={"id": "tmaze-passive", "corridor_length": 3},
        run_name="script",
        ckpt_base_dir=tmp_path,
        tstep_encoder_type="script_tstep_encoder",
        traj_encoder_type="script_traj_encoder",
        agent_type="script_agent",
        exploration_wrapper_type="script_exploration",
        max_seq_len=4,
        traj_save_len=4,
        parallel_actors=2,
        epochs=1,
        train_timesteps_per_epoch=8,
        train_batches_per_epoch=2,
        batch_size=4,
        val_interval=None,
        verbose=False,
        seed=0,
    )
    experiment.start()
    try:
        assert type(experiment.policy).__name__ == "ScriptAgent"
        assert type(experiment.policy.tstep_encoder) is ScriptTstepEncoder
        assert type(experiment.policy.traj_encoder) is ScriptTrajEncoder
        experiment.learn()
    finally:
        experiment.close()
    record = json.loads((tmp_path / "script" / "config.resolved.json").read_text(encoding="utf-8"))
    for kind, cls in SCRIPT_CLASSES.items():
        assert record[kind]["kind"] == f"script_{kind}"
        assert record[kind]["registered_in_process"] == f"{__name__}:{cls.__name__}"
