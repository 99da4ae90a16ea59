"""The ``babyai`` suite: k attempts per layout, obs modes, splits, per-attempt success metrics, the CLI, hygiene."""

from __future__ import annotations

import numpy as np
import pytest

from amago_envs.suites.babyai.env import MISSION_WORDS, encode_mission
from amago_envs.suites.babyai.specs import BABYAI, BABYAI_LEVELS, MULTITASK_LEVELS


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
def test_obs_kinds(obs_kind: str, side: int, build) -> None:
    env = build("babyai-GoToLocal", obs_kind=obs_kind).make_env("train")
    timestep, _ = env.reset(seed=0)
    assert timestep.obs["image"].shape == (1, side, side, 3)
    assert timestep.obs["image"].dtype == np.uint8
    assert timestep.obs["mission"].shape == (1, 9)
    extra = timestep.obs["extra"][0]
    assert extra[:4].sum() == 1.0
    assert extra[4] == pytest.approx(1 / 2)


def test_k_attempts_on_the_same_layout_log_success_per_attempt(build) -> None:
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


def test_splits_differ_in_layouts_and_levels(build) -> None:
    suite = build("babyai-multitask")
    assert len(suite.levels("train")) == 50
    assert suite.levels("train") == build("babyai-multitask").levels("train")  # seeded pick
    assert suite.levels("val") == MULTITASK_LEVELS
    assert suite.seed_range("train") == (0, 5000)
    assert suite.seed_range("test")[0] == 5000
    with pytest.raises(ValueError, match="unknown split"):
        suite.make_env("tets")


def test_multitask_env_is_named_per_level_and_logs_metrics(build, play) -> None:
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


def test_cli_runs_one_tiny_epoch_with_the_preset(tmp_path, dry_run, run_tiny, tiny_gru) -> None:
    config = dry_run("babyai-multitask")
    assert config["agent"]["reward_multiplier"] == 1000.0
    assert config["run"]["max_seq_len"] == 512
    assert config["replay"]["traj_save_len"] == 1536
    assert config["exploration"]["steps_anneal"] == 500_000
    assert config["tstep_encoder"]["kind"] == "babyai"  # example 10's grid CNN + mission encoder
    assert run_tiny("babyai-GoToLocal", *tiny_gru("d_output"))["total_frames"] == 16
    (metrics_file,) = tmp_path.glob("*/metrics.jsonl")
    assert "total_frames-babyai-GoToLocal" in metrics_file.read_text()


def test_specs_module_imports_no_heavy_library(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.babyai.specs", ("torch", "gymnasium", "minigrid", "cv2"))


def test_missing_minigrid_reports_the_install_hint(assert_missing_extra) -> None:
    assert_missing_extra(BABYAI, "minigrid", "babyai", build={"kind": "babyai"})
