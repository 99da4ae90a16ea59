"""The ``babyai`` suite: k attempts per layout, obs modes, splits, per-attempt success metrics, the CLI, hygiene."""

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
from amago_envs.suites.babyai.env import MISSION_WORDS, encode_mission
from amago_envs.suites.babyai.specs import BABYAI, BABYAI_LEVELS, MULTITASK_LEVELS

TINY = [
    "--traj-encoder", "gru", "-o", "traj_encoder.d_hidden=16", "-o", "traj_encoder.d_output=16",
    "-o", "tstep_encoder.d_hidden=16", "-o", "tstep_encoder.d_output=16", "-o", "schedule.epochs=1",
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


def test_every_listed_level_is_registered_by_minigrid() -> None:
    import gymnasium
    import minigrid  # noqa: F401

    registered = {key.split("-")[1] for key in gymnasium.registry if key.startswith("BabyAI-")}
    assert set(BABYAI_LEVELS) == registered
    assert "BossLevel" not in MULTITASK_LEVELS
    assert "GoToLocal" in MULTITASK_LEVELS


def test_mission_encoding() -> None:
    ids = encode_mission("go to the red ball, then pick up the key behind you", 9)
    assert ids.shape == (9,)
    assert ids.dtype == np.int32
    assert ids[0] == MISSION_WORDS.index("go") + 2
    assert encode_mission("zorp", 3).tolist() == [1, 0, 0]


@pytest.mark.parametrize(
    ("obs_kind", "side"), [("partial-grid", 7), ("full-grid", 22), ("partial-image", 63), ("full-image", 63)]
)
def test_obs_kinds(obs_kind: str, side: int) -> None:
    env = build("babyai-GoToLocal", obs_kind=obs_kind).make_env("train")
    timestep, _ = env.reset(seed=0)
    assert timestep.obs["image"].shape == (1, side, side, 3)
    assert timestep.obs["image"].dtype == np.uint8
    assert timestep.obs["mission"].shape == (1, 9)
    extra = timestep.obs["extra"][0]
    assert extra[:4].sum() == 1.0
    assert extra[4] == pytest.approx(1 / 2)


def test_k_attempts_on_the_same_layout_log_success_per_attempt() -> None:
    env = build("babyai-OneRoomS8", k_episodes=3).make_gym_env()
    first, _ = env.reset(seed=5)
    successes, done, restarted, attempt_ended = [], False, [], False
    while not done:
        obs, reward, done, _, info = env.step(int(env.np_random.integers(7)))
        if attempt_ended:
            assert reward == 0.0
            restarted.append(obs)
        ended = [k for k in info if k.endswith("Success")]
        successes += ended
        attempt_ended = bool(ended)
    assert successes == [f"AMAGO_LOG_METRIC Episode {n} Success" for n in (1, 2, 3)]
    # The step after an attempt shows the start of the same layout again.
    np.testing.assert_array_equal(restarted[0]["image"], first["image"])
    np.testing.assert_array_equal(restarted[0]["mission"], first["mission"])


def test_splits_differ_in_layouts_and_levels() -> None:
    suite = build("babyai-multitask")
    assert len(suite.levels("train")) == 50
    assert suite.levels("train") == build("babyai-multitask").levels("train")  # seeded pick
    assert suite.levels("val") == MULTITASK_LEVELS
    assert suite.seed_range("train") == (0, 5000)
    assert suite.seed_range("test")[0] == 5000
    with pytest.raises(ValueError, match="unknown split"):
        suite.make_env("tets")


def test_multitask_env_is_named_per_level_and_logs_metrics() -> None:
    env = build("babyai-multitask", k_episodes=1).make_env("train")
    names = set()
    for seed in range(6):
        env.reset(seed=seed)
        names.add(env.env_name)
    assert len(names) > 1
    assert all(name.startswith("babyai-") for name in names)
    _, seq = play(env, 400)
    metrics = {key for per_env in seq.metric_history.values() for key in per_env}
    assert "Episode 1 Success" in metrics


def test_cli_runs_one_tiny_epoch_with_the_preset(tmp_path) -> None:
    runner = CliRunner()
    dry = runner.invoke(app, ["run", "--env", "babyai-multitask", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    config = json.loads(dry.stdout)
    assert config["agent"]["reward_multiplier"] == 1000.0
    assert config["run"]["max_seq_len"] == 512
    assert config["replay"]["traj_save_len"] == 1536
    assert config["exploration"]["steps_anneal"] == 500_000
    result = runner.invoke(
        app, ["run", "--env", "babyai-GoToLocal", *TINY, "-o", f"run.ckpt_base_dir={tmp_path}"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total_frames"] == 16
    (metrics_file,) = tmp_path.glob("*/metrics.jsonl")
    assert "total_frames-babyai-GoToLocal" in metrics_file.read_text()


def test_specs_module_imports_no_heavy_library() -> None:
    code = (
        "import sys\nimport amago_envs.suites.babyai.specs\n"
        "print(','.join(m for m in ('torch', 'gymnasium', 'minigrid', 'cv2') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_missing_minigrid_reports_the_install_hint(monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "minigrid" else real(name, *a)
    )
    assert BABYAI.missing_requirements() == ["minigrid"]
    info = next(i for i in registries().env_suites.describe() if i.name == "babyai")
    assert info.status == "missing"
    assert 'pip install "amago-envs[babyai]"' in info.detail
    with pytest.raises(MissingRequirementError, match=r"amago-envs\[babyai\]"):
        registries().env_suites.build({"kind": "babyai"})
