"""AMAGO's import lines still work in amago, or fail with one line that says what to use instead.

The lines below are every ``import amago...`` / ``from amago... import ...`` of AMAGO's README, tutorial and
examples index (the seeds), plus the dotted names those pages use (``amago.envs.AMAGOEnv``...).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import amago
from amago._compat import MIGRATION_GUIDE, NO_COUNTERPART, NoCounterpartError

REPO = Path(__file__).resolve().parents[2]

SEED_IMPORTS_THAT_WORK: list[tuple[str, dict[str, str]]] = [
    ("from amago.cli_utils import use_config", {"use_config": "amago.cli_utils:use_config"}),
    (
        "from amago.cli_utils import switch_traj_encoder, switch_tstep_encoder, switch_agent, switch_exploration, "
        "use_config",
        {
            name: f"amago.cli_utils:{name}"
            for name in (
                "switch_traj_encoder",
                "switch_tstep_encoder",
                "switch_agent",
                "switch_exploration",
                "use_config",
            )
        },
    ),
    (
        "from amago.cli_utils import switch_async_mode, use_config",
        {
            "switch_async_mode": "amago.cli_utils:switch_async_mode",
            "use_config": "amago.cli_utils:use_config",
        },
    ),
    ("from amago import TstepEncoder", {"TstepEncoder": "amago_nets.base:TstepEncoder"}),
    ("from amago.agent import MultiTaskAgent", {"MultiTaskAgent": "amago_agents.multitask:MultiTaskAgent"}),
    (
        "from amago.envs import AMAGO_ENV_LOG_PREFIX",
        {"AMAGO_ENV_LOG_PREFIX": "amago_core.rollout:AMAGO_ENV_LOG_PREFIX"},
    ),
    (
        "from amago.envs.exploration import EpsilonGreedy",
        {"EpsilonGreedy": "amago.from_amago.exploration:EpsilonGreedy"},
    ),
    ("from amago.nets.cnn import IMPALAishCNN", {"IMPALAishCNN": "amago.from_amago.nets:IMPALAishCNN"}),
    ("from amago.nets.cnn import NatureishCNN", {"NatureishCNN": "amago.from_amago.nets:NatureishCNN"}),
    ("from amago.nets.ff import Normalization", {"Normalization": "amago.from_amago.nets:Normalization"}),
    (
        "from amago.nets.traj_encoders import MambaTrajEncoder",
        {"MambaTrajEncoder": "amago_nets.traj_mamba:MambaTrajEncoder"},
    ),
    (
        "from amago.nets.traj_encoders import TformerTrajEncoder",
        {"TformerTrajEncoder": "amago_nets.traj_transformer:TransformerTrajEncoder"},
    ),
    (
        "from amago.nets.tstep_encoders import CNNTstepEncoder",
        {"CNNTstepEncoder": "amago_nets.tstep_cnn:CNNTstepEncoder"},
    ),
    ("from amago.experiment import Experiment", {"Experiment": "amago.from_amago.experiment:Experiment"}),
    ("from amago.envs import AMAGOEnv", {"AMAGOEnv": "amago.envs.amago_env:AMAGOEnv"}),
    ("from amago.agent import Agent", {"Agent": "amago_agents.agent:Agent"}),
    (
        "from amago.envs.builtin.gymnax_envs import GymnaxCompatability",
        {"GymnaxCompatability": "amago.from_amago.envs.gymnax:GymnaxCompatibility"},
    ),
]
"""(import line, {name it binds: the amago object it must be})."""

SEED_IMPORTS_WITHOUT_COUNTERPART: list[tuple[str, str]] = [
    # AMAGO's example 08's module, whose stable-retro classes amago has no suite for.
    ("from amago.envs.builtin.ale_retro import RetroArcade", "amago.envs.builtin.ale_retro.RetroArcade"),
    # AMAGO's example 10's mission embedder.
    ("from amago.nets.goal_embedders import TokenGoalEmb", "amago.nets.goal_embedders.TokenGoalEmb"),
]
"""(import line of the seeds' examples, the AMAGO name whose pointer it must raise)."""

SEED_DOTTED_NAMES: dict[str, str] = {
    "amago.Experiment": "amago.from_amago.experiment:Experiment",
    "amago.TrajEncoder": "amago_nets.base:TrajEncoder",
    "amago.envs.AMAGOEnv": "amago.envs.amago_env:AMAGOEnv",
    "amago.envs.amago_env.AMAGOEnv": "amago.envs.amago_env:AMAGOEnv",
    "amago.envs.exploration.EpsilonGreedy": "amago.from_amago.exploration:EpsilonGreedy",
    "amago.experiment.Experiment": "amago.from_amago.experiment:Experiment",
    "amago.agent.Agent": "amago_agents.agent:Agent",
    "amago.hindsight.Timestep": "amago_core.data.timestep:Timestep",
    "amago.hindsight.Trajectory": "amago_core.data.trajectory:Trajectory",
    "amago.loading.RLDataset": "amago.from_amago.data:RLDataset",
    "amago.loading.DiskTrajDataset": "amago_core.data.disk_buffer:DiskTrajDataset",
    "amago.loading.Batch": "amago_core.data.batch:Batch",
    "amago.nets.tstep_encoders.FFTstepEncoder": "amago_nets.tstep_ff:FFTstepEncoder",
    "amago.nets.traj_encoders.FFTrajEncoder": "amago_nets.traj_simple:FFTrajEncoder",
    "amago.nets.traj_encoders.GRUTrajEncoder": "amago_nets.traj_rnn:GRUTrajEncoder",
    "amago.envs.exploration.BilevelEpsilonGreedy": "amago.from_amago.exploration:BilevelEpsilonGreedy",
}
"""Names AMAGO's pages use as dotted attributes (no import of the submodule first) -> the amago object."""

NOT_SHIMS = {"amago._compat", "amago._registries", "amago.default_job"}
NOT_SHIM_PACKAGES = ("amago.from_amago",)
"""amago's own subpackages (no AMAGO module of that name): `amago import-amago`'s converter, which imports torch."""


def _load(target: str) -> object:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _shim_modules() -> list[str]:
    names = [info.name for info in pkgutil.walk_packages(amago.__path__, prefix="amago.")]
    shims = (n for n in names if n not in NOT_SHIMS and not n.startswith(NOT_SHIM_PACKAGES))
    return ["amago", *sorted(shims)]


SHIMS = _shim_modules()


def _pointers() -> list[tuple[str, str]]:
    for name in SHIMS:
        importlib.import_module(name)
    return sorted((module, name) for module, names in NO_COUNTERPART.items() for name in names)


POINTERS = _pointers()


@pytest.mark.parametrize(
    ("line", "expected"), SEED_IMPORTS_THAT_WORK, ids=[x[0] for x in SEED_IMPORTS_THAT_WORK]
)
def test_seed_import_gives_the_amago_counterpart(line, expected):
    namespace: dict[str, object] = {}
    exec(line, namespace)
    for name, target in expected.items():
        assert namespace[name] is _load(target)


@pytest.mark.parametrize(("dotted", "target"), sorted(SEED_DOTTED_NAMES.items()))
def test_seed_dotted_name_gives_the_amago_counterpart(dotted, target):
    value: object = amago
    for part in dotted.split(".")[1:]:
        value = getattr(value, part)
    assert value is _load(target)


@pytest.mark.parametrize(
    ("line", "full_name"),
    SEED_IMPORTS_WITHOUT_COUNTERPART,
    ids=[x[0] for x in SEED_IMPORTS_WITHOUT_COUNTERPART],
)
def test_seed_import_without_counterpart_fails_with_one_line_pointer(line, full_name):
    with pytest.raises(ImportError) as raised:
        exec(line, {})
    message = str(raised.value)
    assert isinstance(raised.value, NoCounterpartError)
    assert message.startswith(f"{full_name} is not a name in amago: ")
    assert message.endswith(f"see {MIGRATION_GUIDE}.")
    assert "\n" not in message


def test_every_backbone_of_amagos_cnn_module_is_amagos():
    import torch

    import amago.nets.cnn

    expected = {
        "CNN": "ImageBackbone",
        "NatureishCNN": "NatureishCNN",
        "IMPALAishCNN": "IMPALAishCNN",
        "DrQCNN": "DrQCNN",
        "GridworldCNN": "GridworldCNN",
        "DrQv2Aug": "DrQv2Aug",
    }
    assert sorted(amago.nets.cnn.__all__) == sorted(expected)
    assert not NO_COUNTERPART["amago.nets.cnn"]
    namespace: dict[str, object] = {}
    exec("from amago.nets.cnn import DrQCNN, GridworldCNN", namespace)
    for name, target in expected.items():
        ours = getattr(amago.nets.cnn, name)
        amagos = _load(f"amago_nets.cnn:{target}")
        if name in ("CNN", "DrQv2Aug"):
            assert ours is amagos, name
        else:  # amago-nets' backbone, with AMAGO's blank_img (examples 10 and 11 probe the output size with it)
            assert issubclass(ours, amagos), name
            assert ours.__name__ == name
            assert set(vars(ours)) <= {
                "__module__",
                "__doc__",
                "__qualname__",
                "__firstlineno__",
                "__static_attributes__",
            }
    assert namespace["GridworldCNN"] is amago.nets.cnn.GridworldCNN
    grid = amago.nets.cnn.GridworldCNN(img_shape=(5, 5, 2), channels_first=False, activation="leaky_relu")
    assert grid.blank_img.shape == (1, 1, 5, 5, 2)
    assert grid.blank_img.dtype == torch.uint8
    assert grid(grid.blank_img).shape[-1] == grid.output_size()


def test_amago_submodules_import_as_modules():
    import amago.nets
    import amago.nets.traj_encoders

    assert sys.modules["amago.nets"] is amago.nets
    assert amago.nets.traj_encoders.TformerTrajEncoder is _load(
        "amago_nets.traj_transformer:TransformerTrajEncoder"
    )


def test_dir_lists_the_public_api_only():
    listed = set(dir(amago))
    assert {"Experiment", "AMAGOEnv", "Agent", "TstepEncoder", "TrajEncoder", "load_policy"} <= listed
    assert {"envs", "nets", "agent", "cli_utils", "experiment", "hindsight", "loading"} <= listed
    assert not {"shim_exports", "annotations"} & listed
    assert "ExplorationWrapper" in listed  # AMAGO's base class: subclasses override add_exploration_noise
    assert {"register_agent", "get_traj_encoder_cls", "list_registered_explorations"} <= listed
    assert set(amago.__all__) <= listed


@pytest.mark.parametrize("module_name", SHIMS)
def test_every_listed_name_of_a_shim_loads(module_name):
    module = importlib.import_module(module_name)
    assert set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        if module_name == "amago" and name == "load_policy":
            continue  # amago-tools' name: test_load_policy_is_exported
        missing: ImportError | None = None
        try:
            value = getattr(module, name)
        except ImportError as error:  # an env class whose suite's library is not installed (dm_alchemy)
            missing = error
        if missing is None:
            assert value is not None, f"{module_name}.{name}"
            continue
        assert not isinstance(missing, NoCounterpartError)
        assert missing.name is not None
        assert importlib.util.find_spec(missing.name) is None, str(missing)
        assert "\n" not in str(missing)


def test_load_policy_is_exported():
    import amago_tools.policy as policy

    assert amago.load_policy is policy.load_policy


@pytest.mark.parametrize(("module_name", "name"), POINTERS, ids=[f"{m}.{n}" for m, n in POINTERS])
def test_every_name_without_counterpart_raises_one_line(module_name, name):
    module = importlib.import_module(module_name)
    with pytest.raises(NoCounterpartError) as by_attribute:
        getattr(module, name)
    with pytest.raises(NoCounterpartError) as by_import:
        exec(f"from {module_name} import {name}", {})
    message = str(by_attribute.value)
    assert message == str(by_import.value)
    assert message.startswith(f"{module_name}.{name} is not a name in amago: ")
    assert "\n" not in message
    assert name not in dir(module)


def _referenced_objects(text: str) -> set[str]:
    """Dotted amago names a pointer mentions (``amago_nets.kv_cache.KVCache``), without call parentheses."""
    return set(re.findall(r"\bamago_[a-z]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+", text))


def _resolve_dotted(dotted: str) -> object:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise ImportError(dotted)


@pytest.mark.parametrize(("module_name", "name"), POINTERS, ids=[f"{m}.{n}" for m, n in POINTERS])
def test_pointers_name_things_that_exist(module_name, name):
    hint = NO_COUNTERPART[module_name][name]
    for dotted in _referenced_objects(hint):
        _resolve_dotted(dotted)
    for page in re.findall(r"docs/[\w/.-]+\.md", hint):
        assert (REPO / page).is_file(), page


def test_classes_of_amago_select_the_registered_component():
    from amago.agent import MultiTaskAgent
    from amago.nets.traj_encoders import TformerTrajEncoder
    from amago.nets.tstep_encoders import CNNTstepEncoder

    experiment = amago.Experiment(
        env="tmaze-passive",
        tstep_encoder_type=CNNTstepEncoder,
        traj_encoder_type=TformerTrajEncoder,
        agent_type=MultiTaskAgent,
    )
    components = experiment.components
    assert (components.tstep_encoder.name, components.traj_encoder.name, components.agent.name) == (
        "cnn",
        "transformer",
        "multitask",
    )


def test_switch_async_mode_sets_the_run_mode():
    from pydantic import ValidationError

    from amago.cli_utils import switch_async_mode

    experiment = amago.Experiment(env="tmaze-passive")
    switch_async_mode(experiment, "learn")
    assert experiment.config.run.mode == "learn"
    with pytest.raises(ValidationError):
        # AMAGO's docs said `train`; its code, like amago, wants `learn`.
        switch_async_mode(experiment, "train")


def test_importing_amago_and_its_amago_modules_loads_no_torch():
    code = (
        "import importlib, sys\n"
        f"for name in {SHIMS!r}:\n"
        "    module = importlib.import_module(name)\n"
        "    dir(module)\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
