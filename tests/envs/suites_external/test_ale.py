"""The ``ale`` suite: frames, action spaces, unclipped rewards, multi-game naming, the CLI, hygiene."""

from __future__ import annotations

import numpy as np
import pytest

from amago_envs.suites.ale.specs import ALE, ALE_GAMES


def test_every_listed_game_has_a_rom() -> None:
    import ale_py
    import gymnasium

    gymnasium.register_envs(ale_py)
    registered = {key[4:].rsplit("-v", 1)[0] for key in gymnasium.registry if key.startswith("ALE/")}
    assert set(ALE_GAMES) == registered


@pytest.mark.parametrize(
    ("options", "shape"),
    [
        ({}, (3, 84, 84)),
        ({"grayscale": True, "resolution": (64, 96)}, (1, 64, 96)),
        ({"channels_last": True}, (84, 84, 3)),
    ],
)
def test_frames(options, shape, build) -> None:
    env = build("ale-Pong", **options).make_env("train")
    timestep, _ = env.reset(seed=0)
    assert timestep.obs["observation"].shape == (1, *shape)
    assert timestep.obs["observation"].dtype == np.uint8


def test_action_spaces(build, play) -> None:
    from amago_envs.suites.ale.env import _button_table

    assert build("ale-Pong").make_env().action_space.n == 18
    buttons = build("ale-Pong", action_space="multibinary").make_env()
    assert buttons.is_multibinary
    buttons.reset(seed=0)
    buttons.step(np.array([[1, 0, 0, 1, 1]], dtype=np.uint8))
    import ale_py

    assert ale_py.Action(_button_table()[1, 0, 0, 1, 1]).name == "UPRIGHTFIRE"
    assert ale_py.Action(_button_table()[1, 1, 0, 0, 0]).name == "NOOP"  # opposite directions cancel
    stick = build("ale-Pong", action_space="continuous").make_env()
    assert stick.action_space.shape == (3,)
    play(stick, 3)


def test_rewards_are_unclipped_unless_asked(build) -> None:
    raw = build("ale-Pong", frame_skip=1).make_gym_env()
    assert not any("SignRewards" in type(w).__name__ for w in _wrappers(raw))
    clipped = build("ale-Pong", clip_rewards=True).make_gym_env()
    assert any("SignRewards" in type(w).__name__ for w in _wrappers(clipped))


def _wrappers(env):
    while hasattr(env, "env"):
        yield env
        env = env.env


def test_multigame_names_envs_after_the_game(build) -> None:
    env = build("ale-multigame", games=["Pong", "Breakout"]).make_env("train")
    names = set()
    for seed in range(6):
        env.reset(seed=seed)
        names.add(env.env_name)
    assert names == {"Pong", "Breakout"}
    with pytest.raises(ValueError, match="Pongg"):
        build("ale-multigame", games=["Pongg"])


def test_cli_runs_one_tiny_epoch_with_the_preset(tmp_path, dry_run, run_tiny, tiny_gru) -> None:
    config = dry_run("ale-multigame")
    assert config["agent"]["reward_multiplier"] == 0.25
    assert config["agent"]["offline_coeff"] == 0.0
    assert config["env"]["frame_skip"] == 5
    assert config["env"]["sticky_action_prob"] == 0.25
    assert config["tstep_encoder"]["kind"] == "cnn"
    assert config["tstep_encoder"]["channels_first"]
    assert config["run"]["max_seq_len"] == 80
    assert config["replay"]["traj_save_len"] == 240
    summary = run_tiny("ale-Pong", *tiny_gru("img_features"), overrides=["env.resolution=[42,42]"])
    assert summary["total_frames"] == 16
    (metrics_file,) = tmp_path.glob("*/metrics.jsonl")
    assert "total_frames-Pong" in metrics_file.read_text()


def test_specs_module_imports_no_heavy_library(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.ale.specs", ("torch", "gymnasium", "ale_py", "cv2"))


def test_missing_ale_py_reports_the_install_hint(assert_missing_extra) -> None:
    assert_missing_extra(ALE, "ale_py", "ale", build={"kind": "ale"})
