"""The built-in suites' specs and configs: import cost, entry points, task and option validation, building."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import entry_points

import pytest
from pydantic import ValidationError

from amago_envs.suites import specs
from amago_envs.suites.specs import (
    FROZEN_LAKE,
    KEY_DOOR,
    MAZERUNNER,
    TMAZE,
    FrozenLakeConfig,
    KeyDoorConfig,
    MazeRunnerConfig,
    TMazeConfig,
)
from amago_envs.suites.wind.specs import WIND

ALL_SPECS = [TMAZE, FROZEN_LAKE, KEY_DOOR, MAZERUNNER, WIND]


def test_specs_module_imports_neither_torch_nor_gymnasium() -> None:
    code = (
        "import sys\n"
        "import amago_envs.suites.specs\n"
        "heavy = [m for m in ('torch', 'gymnasium', 'matplotlib') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"specs.py pulled in: {result.stdout.strip()}"


def test_suite_modules_do_not_import_matplotlib() -> None:
    code = (
        "import sys\n"
        "import amago_envs.suites.tmaze, amago_envs.suites.frozen_lake\n"
        "import amago_envs.suites.key_door, amago_envs.suites.mazerunner\n"
        "print('matplotlib' in sys.modules, 'torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False False"


def test_entry_points_name_these_specs() -> None:
    declared = {ep.name: ep.load() for ep in entry_points(group="amago.env_suites")}
    for spec in ALL_SPECS:
        assert declared.get(spec.name) is spec


@pytest.mark.parametrize("spec", ALL_SPECS, ids=lambda s: s.name)
def test_every_config_field_is_documented(spec) -> None:
    assert spec.config.fields_missing_docs() == []
    assert spec.config.kind_name() == spec.name
    assert spec.group == "amago.env_suites"


@pytest.mark.parametrize("spec", ALL_SPECS, ids=lambda s: s.name)
def test_spec_lists_tasks_and_default(spec) -> None:
    tasks = spec.tasks
    default = spec.default_task
    assert default is None if not tasks else default in tasks
    for task in tasks:
        assert spec.make_config({"task": task}).task == task


def test_tmaze_tasks() -> None:
    assert TMAZE.tasks == ("passive", "active")
    assert TMAZE.default_task == "passive"


def test_unknown_task_lists_tasks_and_suggests() -> None:
    with pytest.raises(ValidationError) as excinfo:
        TMazeConfig(task="pasive")
    message = str(excinfo.value)
    assert "no task 'pasive'" in message
    assert "Did you mean 'passive'?" in message
    assert "tmaze-passive, tmaze-active" in message


def test_suite_without_tasks_rejects_any_task() -> None:
    with pytest.raises(ValidationError, match="has no tasks, got 'easy'; use the env id 'frozen-lake'"):
        FrozenLakeConfig(task="easy")
    with pytest.raises(ValidationError, match="env id 'key-door'"):
        KeyDoorConfig(task="dark")
    with pytest.raises(ValidationError, match="env id 'mazerunner'"):
        MazeRunnerConfig(task="x")


def test_check_task_passes_none_and_known() -> None:
    assert specs.check_task("tmaze", None, specs.TMAZE_TASKS) is None
    assert specs.check_task("tmaze", "active", specs.TMAZE_TASKS) == "active"


def test_amago_defaults() -> None:
    frozen = FrozenLakeConfig()
    assert (frozen.size, frozen.k_episodes, frozen.hard_mode, frozen.recover_mode) == (5, 10, False, False)
    assert (frozen.max_episode_steps, frozen.show_k_progress, frozen.slip_chance) == (None, True, 0.0)
    door = KeyDoorConfig()
    assert (door.dark, door.size, door.max_episode_steps, door.meta_rollout_horizon) == (True, 9, 50, 500)
    assert (door.start_location, door.key_location, door.goal_location) == ("random",) * 3
    maze = MazeRunnerConfig()
    assert (maze.maze_dim, maze.num_goals, maze.time_limit, maze.randomized_action_space) == (
        11,
        3,
        250,
        False,
    )
    tmaze = TMazeConfig()
    assert (tmaze.corridor_length, tmaze.goal_reward, tmaze.penalty) == (10, 1.0, None)


@pytest.mark.parametrize(
    ("config_type", "options", "fragment"),
    [
        (FrozenLakeConfig, {"slip_chance": 1.0}, "slip_chance"),
        (FrozenLakeConfig, {"size": 1}, "size"),
        (TMazeConfig, {"penalty": 0.5}, "penalty"),
        (TMazeConfig, {"corridor_lenght": 5}, "did you mean 'corridor_length'"),
        (KeyDoorConfig, {"key_location": (9, 0)}, r"key_location=\(9, 0\) is outside the 9x9 room"),
        (MazeRunnerConfig, {"min_num_goals": 4, "num_goals": 3}, "min_num_goals=4 exceeds num_goals=3"),
        (MazeRunnerConfig, {"goal_in_obs": True}, "relabeling cannot rewrite them"),
        (MazeRunnerConfig, {"maze_dim": 5}, "maze_dim"),
    ],
)
def test_invalid_options_fail_with_a_pointed_message(config_type, options, fragment) -> None:
    with pytest.raises(ValidationError, match=fragment):
        config_type(**options)


def test_fixed_locations_round_trip_through_json() -> None:
    config = KeyDoorConfig(start_location=(0, 1), key_location="random", goal_location=[8, 8])
    assert config.goal_location == (8, 8)
    assert KeyDoorConfig.model_validate(config.to_dict()) == config


@pytest.mark.parametrize(
    ("spec", "options", "env_name"),
    [
        (TMAZE, {}, "TMaze-Passive-H10"),
        (TMAZE, {"task": "active", "corridor_length": 50}, "TMaze-Active-H50"),
        (FROZEN_LAKE, {}, "MetaFrozenLake-k10-5x5-easy-reset"),
        (FROZEN_LAKE, {"hard_mode": True, "recover_mode": True, "slip_chance": 0.1}, None),
        (KEY_DOOR, {}, "DarkKeyDoor-9x9-H500"),
        (KEY_DOOR, {"dark": False, "size": 8}, "LightKeyDoor-8x8-H500"),
        (MAZERUNNER, {}, "MazeRunner-11x11-k3"),
        (MAZERUNNER, {"maze_dim": 12, "relabel_info": False}, "MazeRunner-13x13-k3"),
    ],
)
def test_build_makes_amago_envs(spec, options, env_name) -> None:
    from amago_core.rollout.env import AMAGOEnv

    suite = spec.build(options)
    if env_name is not None:
        assert suite.env_name == env_name
    # Logs and trajectory file names split on "_" and "/": suite names must avoid both.
    assert "_" not in suite.env_name
    assert "/" not in suite.env_name
    for split in ("train", "val", "test"):
        env = suite.make_env(split)
        assert isinstance(env, AMAGOEnv)
        assert env.env_name == suite.env_name
        first, _ = env.reset(seed=0)
        assert first.obs.keys() == env.observation_space.spaces.keys()
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert reward.shape == terminated.shape == truncated.shape == (1,)


def test_unknown_split_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown split 'valid'\. Did you mean 'val'\?"):
        TMAZE.build().make_env("valid")


@pytest.mark.parametrize(
    ("module", "suite", "options"),
    [
        ("xland", "XLandSuite", {}),
        ("procgen", "ProcgenSuite", {}),
        ("gymnax", "GymnaxSuite", {}),
        ("metaworld", "MetaworldSuite", {}),
        ("babyai", "BabyAISuite", {}),
        ("ale", "ALESuite", {}),  # multigame: a make_env of its own
        ("ale", "ALESuite", {"task": "Pong"}),
        ("popgym", "POPGymSuite", {}),
        ("popgym", "POPGymSuite", {"task": "multidomain"}),  # a make_env of its own
    ],
)
def test_suites_with_their_own_make_env_refuse_an_unknown_split_alike(
    module: str, suite: str, options: dict[str, str]
) -> None:
    # The split is checked before the env is built, so this runs without the suites' extras installed.
    import importlib

    cls = getattr(importlib.import_module(f"amago_envs.suites.{module}.suite"), suite)
    made = cls(cls.config_type.model_validate(options))
    expected = "unknown split 'valid'. Did you mean 'val'? Use one of: train, val, test."
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        made.make_env("valid")


def test_suite_rejects_a_foreign_config() -> None:
    from amago_envs.suites.tmaze import TMazeSuite

    with pytest.raises(TypeError, match="TMazeSuite takes a TMazeConfig"):
        TMazeSuite(FrozenLakeConfig())
    assert TMazeSuite().task == "passive"


def test_mazerunner_relabel_observation_keys_reach_amago_env() -> None:
    env = MAZERUNNER.build().make_env()
    assert set(env.observation_space.spaces) == {"obs", "achieved", "goals"}
    flat = MAZERUNNER.build({"relabel_info": False}).make_env()
    assert set(flat.observation_space.spaces) == {"observation"}
    assert flat.observation_space["observation"].shape == (7 + 2 * 3,)


def test_tmaze_penalty_defaults_to_minus_one_over_horizon() -> None:
    assert TMAZE.build({"corridor_length": 20}).make_gym_env().penalty == pytest.approx(-1 / 20)
    assert TMAZE.build({"corridor_length": 20, "penalty": 0.0}).make_gym_env().penalty == 0.0


@pytest.mark.parametrize(
    ("env_id", "suite", "task", "env_name"),
    [
        ("tmaze-passive", "tmaze", "passive", "TMaze-Passive-H10"),
        ("tmaze-active", "tmaze", "active", "TMaze-Active-H10"),
        ("tmaze", "tmaze", None, "TMaze-Passive-H10"),
        ("frozen-lake", "frozen_lake", None, "MetaFrozenLake-k10-5x5-easy-reset"),
        ("key-door", "key_door", None, "DarkKeyDoor-9x9-H500"),
        ("mazerunner", "mazerunner", None, "MazeRunner-11x11-k3"),
    ],
)
def test_env_ids_resolve_through_the_registry(env_id, suite, task, env_name) -> None:
    from amago_core.plugins.registry import registries

    registry = registries()
    assert registry.resolve_env_id(env_id) == (suite, task)
    built = registry.env_suites.build({"kind": suite, "task": task})
    assert built.env_name == env_name


def test_unknown_task_through_the_registry_names_the_tasks() -> None:
    from amago_core.plugins.registry import registries

    registry = registries()
    suite, task = registry.resolve_env_id("tmaze-pasive")
    with pytest.raises(ValidationError, match="Did you mean 'passive'"):
        registry.env_suites.build({"kind": suite, "task": task})
