"""The ``ale`` suite: frames, action spaces, unclipped rewards, multi-game naming, the CLI, hygiene."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.plugins.errors import MissingRequirementError
from amago_core.plugins.registry import registries
from amago_envs.sequence import SequenceEnv
from amago_envs.suites.ale.specs import ALE, ALE_GAMES

TINY = [
    "--traj-encoder", "gru", "-o", "traj_encoder.d_hidden=16", "-o", "traj_encoder.d_output=16",
    "-o", "tstep_encoder.img_features=16", "-o", "tstep_encoder.d_output=16", "-o", "schedule.epochs=1",
    "-o", "schedule.train_timesteps_per_epoch=8", "-o", "schedule.train_batches_per_epoch=1",
    "-o", "schedule.val_interval=null", "-o", "schedule.val_timesteps_per_epoch=8", "-o", "run.max_seq_len=8",
    "-o", "replay.traj_save_len=16", "-o", "rollout.parallel_actors=2", "-o", "optim.batch_size=2", "--quiet",
]  # fmt: skip


def build(env_id: str, **options):
    regs = registries()
    suite_name, task = regs.resolve_env_id(env_id)
    return regs.env_suites.build({"kind": suite_name, "task": task, **options})


def play(env, steps: int, seed: int = 0):
    """Random actions through a SequenceEnv; returns the final timestep and the env."""
    seq = SequenceEnv(env)
    timestep = seq.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if env.is_discrete:
            action = rng.integers(env.action_space.n, size=(1,))
        else:
            action = rng.uniform(-1, 1, size=(1, *env.action_space.shape)).astype(np.float32)
        timestep = seq.step(action).timestep
    return timestep, seq


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
def test_frames(options, shape) -> None:
    env = build("ale-Pong", **options).make_env("train")
    timestep, _ = env.reset(seed=0)
    assert timestep.obs["observation"].shape == (1, *shape)
    assert timestep.obs["observation"].dtype == np.uint8


def test_action_spaces() -> None:
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


def test_rewards_are_unclipped_unless_asked() -> None:
    raw = build("ale-Pong", frame_skip=1).make_gym_env()
    assert not any("SignRewards" in type(w).__name__ for w in _wrappers(raw))
    clipped = build("ale-Pong", clip_rewards=True).make_gym_env()
    assert any("SignRewards" in type(w).__name__ for w in _wrappers(clipped))


def _wrappers(env):
    while hasattr(env, "env"):
        yield env
        env = env.env


def test_multigame_names_envs_after_the_game() -> None:
    env = build("ale-multigame", games=["Pong", "Breakout"]).make_env("train")
    names = set()
    for seed in range(6):
        env.reset(seed=seed)
        names.add(env.env_name)
    assert names == {"Pong", "Breakout"}
    with pytest.raises(ValueError, match="Pongg"):
        build("ale-multigame", games=["Pongg"])


def test_cli_runs_one_tiny_epoch_with_the_preset(tmp_path) -> None:
    runner = CliRunner()
    dry = runner.invoke(app, ["run", "--env", "ale-multigame", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    config = json.loads(dry.stdout)
    assert config["agent"]["reward_multiplier"] == 0.25
    assert config["agent"]["offline_coeff"] == 0.0
    assert config["env"]["frame_skip"] == 5
    assert config["env"]["sticky_action_prob"] == 0.25
    assert config["tstep_encoder"]["kind"] == "cnn"
    assert config["tstep_encoder"]["channels_first"]
    assert config["run"]["max_seq_len"] == 80
    assert config["replay"]["traj_save_len"] == 240
    result = runner.invoke(
        app,
        [
            "run",
            "--env",
            "ale-Pong",
            *TINY,
            "-o",
            "env.resolution=[42,42]",
            "-o",
            f"run.ckpt_base_dir={tmp_path}",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total_frames"] == 16
    (metrics_file,) = tmp_path.glob("*/metrics.jsonl")
    assert "total_frames-Pong" in metrics_file.read_text()


def test_specs_module_imports_no_heavy_library() -> None:
    code = (
        "import sys\nimport amago_envs.suites.ale.specs\n"
        "print(','.join(m for m in ('torch', 'gymnasium', 'ale_py', 'cv2') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_missing_ale_py_reports_the_install_hint(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ale_py" else real(name, *a)
    )
    assert ALE.missing_requirements() == ["ale_py"]
    info = next(i for i in registries().env_suites.describe() if i.name == "ale")
    assert info.status == "missing"
    assert 'pip install "amago-envs[ale]"' in info.detail
    with pytest.raises(MissingRequirementError, match=r"amago-envs\[ale\]"):
        registries().env_suites.build({"kind": "ale"})
