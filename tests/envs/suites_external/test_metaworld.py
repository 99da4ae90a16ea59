"""The ``metaworld`` suite: task names, the k-shot wrapper (soft resets, trial metrics), splits, the CLI, hygiene."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "disable")  # no display; these tests never render

from amago_core.plugins.registry import registries
from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX
from amago_envs.suites.metaworld.specs import METAWORLD, METAWORLD_ENVS, METAWORLD_TASKS

metaworld = pytest.importorskip("metaworld")

from amago_envs.suites.metaworld.kshot import KShotMetaworld, benchmark_envs, env_tasks  # noqa: E402

TINY = [
    "env.k_episodes=2", "env.max_episode_steps=3", "run.max_seq_len=4", "replay.traj_save_len=7",
    "rollout.parallel_actors=2", "schedule.epochs=1", "schedule.train_timesteps_per_epoch=7",
    "schedule.train_batches_per_epoch=1", "schedule.val_interval=1", "schedule.val_timesteps_per_epoch=7",
    "optim.batch_size=2", "tstep_encoder.d_hidden=16", "tstep_encoder.d_output=16", "logging.plot=false",
]  # fmt: skip
"""``-o`` settings of a one-epoch job: 2 actors x 7 steps (k=2 trials of 3 steps plus the first observation)."""


def build(env_id: str, **options):
    regs = registries()
    suite_name, task = regs.resolve_env_id(env_id)
    return regs.env_suites.build({"kind": suite_name, "task": task, **options})


def test_env_names_match_the_installed_metaworld() -> None:
    assert set(METAWORLD_ENVS) == set(metaworld.env_dict.ALL_V3_ENVIRONMENTS)
    assert {"ml10", "ml45", "mt50", "ml1-reach-v3", "mt1-reach-v3"} <= set(METAWORLD_TASKS)


def test_benchmark_splits() -> None:
    ml45_train, ml45_test = benchmark_envs("ml45", "train"), benchmark_envs("ml45", "test")
    assert len(ml45_train) == 45
    assert len(ml45_test) == 5
    assert not set(ml45_train) & set(ml45_test)
    assert benchmark_envs("mt10", "test") == benchmark_envs("mt10", "train")  # MT: no held-out environments
    assert benchmark_envs("ml1-reach-v3", "test") == ("reach-v3",)
    with pytest.raises(ValueError, match="ml1-<env>"):
        benchmark_envs("ml7", "train")


def test_ml1_train_and_test_goals_differ_and_are_cached() -> None:
    train = env_tasks("ml1-reach-v3", "train", "reach-v3", 0)
    test = env_tasks("ml1-reach-v3", "test", "reach-v3", 0)
    assert len(train) == len(test) == 50
    assert {t.data for t in train}.isdisjoint({t.data for t in test})
    assert env_tasks("ml1-reach-v3", "train", "reach-v3", 0) is train  # built once per process


def test_kshot_soft_resets_trial_metrics_and_end() -> None:
    env = KShotMetaworld("ml1-reach-v3", k_episodes=3, max_episode_steps=4)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (40,)
    assert obs.dtype == np.float32
    assert obs[-1] == 1.0
    assert env.env_name == "reach-v3"
    # Make the task report success on the 2nd step of trial 0 and never again: trial metrics are per trial.
    inner_step = env._env.step
    calls = {"n": 0}

    def step(action):
        out = inner_step(action)
        calls["n"] += 1
        return (*out[:4], {**out[4], "success": float(calls["n"] == 2)})

    env._env.step = step
    flags, infos = [], []
    for _ in range(12):
        obs, reward, terminated, truncated, info = env.step(np.zeros(4, dtype=np.float32))
        flags.append(obs[-1])
        infos.append(info)
        assert np.isfinite(reward)
    assert flags == [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0]  # soft reset on each trial's first observation
    assert terminated
    assert not truncated
    final = {k.removeprefix(AMAGO_ENV_LOG_PREFIX).strip(): v for k, v in infos[-1].items()}
    assert final["Trial 0 Success"] == 1.0
    assert final["Trial 1 Success"] == 0.0
    assert final["Trial 2 Success"] == 0.0
    assert final["Total Successes"] == 1.0
    assert not any(k.startswith(AMAGO_ENV_LOG_PREFIX) for info in infos[:-1] for k in info)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(4, dtype=np.float32))
    env.close()


@pytest.mark.slow
def test_suite_splits_and_amago_env_contract() -> None:
    suite = build("metaworld-ml10", k_episodes=1, max_episode_steps=2)
    train_envs, test_envs = set(benchmark_envs("ml10", "train")), set(benchmark_envs("ml10", "test"))
    for split, allowed in (("train", train_envs), ("val", train_envs), ("test", test_envs)):
        env = suite.make_env(split)
        timestep, _ = env.reset(seed=1)
        assert set(timestep.obs) == {"observation"}
        assert timestep.obs["observation"].shape == (1, 40)
        assert env.env_name in allowed  # metrics are kept per Meta-World environment
        assert env.action_space.shape == (4,)
        for _ in range(2):
            timestep, _, terminated, _, info = env.step(np.zeros((1, 4), dtype=np.float32))
        assert terminated.all()
        assert f"{AMAGO_ENV_LOG_PREFIX} Total Successes" in info
        env.close()
    with pytest.raises(ValueError, match="split"):
        suite.make_env("tset")


def test_preset_and_unknown_task(dry_run) -> None:
    config = dry_run("metaworld-ml45")
    assert config["exploration"]["kind"] == "bilevel"
    assert config["exploration"]["rollout_horizon"] == 1500
    assert config["run"]["max_seq_len"] == 256
    assert config["replay"]["traj_save_len"] == 1024
    assert config["optim"]["learning_rate"] == 5e-4
    assert config["agent"]["reward_multiplier"] == 1.0
    # Example 07's two-hot bins reach the multitask agent when the run picks it, with the shared settings.
    multitask = dry_run("metaworld-ml45", "--agent", "multitask")["agent"]
    assert (multitask["min_return"], multitask["max_return"], multitask["output_bins"]) == (
        -100.0,
        15000.0,
        96,
    )
    assert multitask["num_critics"] == 4
    with pytest.raises(ValueError, match="ml1-reach-v3"):
        build("metaworld-ml1-reach-v2")


@pytest.mark.slow
def test_cli_ml45_with_mamba_runs_one_tiny_epoch(run_tiny) -> None:
    summary = run_tiny(
        "metaworld-ml45",
        "--traj-encoder",
        "mamba",
        overrides=["traj_encoder.d_model=16", "traj_encoder.n_layers=1", *TINY],
    )
    assert summary["total_frames"] == 14
    names = {k.split(" in ")[-1] for k in summary["final_test"] if " in " in k and "Across" not in k}
    assert names
    assert names <= set(benchmark_envs("ml45", "test"))  # the final test runs on the held-out tasks
    assert any(k.startswith("Average Trial 1 Success in ") for k in summary["final_test"])


def test_specs_module_imports_no_heavy_library(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.metaworld.specs", ("torch", "gymnasium", "metaworld", "mujoco"))


def test_missing_metaworld_reports_the_install_hint(assert_missing_extra) -> None:
    assert_missing_extra(METAWORLD, "metaworld", "metaworld", build={"kind": "metaworld"})


def test_reward_scales_multiply_the_named_environments_rewards() -> None:
    def rewards(scales: dict[str, float] | None) -> list[float]:
        env = KShotMetaworld("ml1-reach-v3", k_episodes=1, max_episode_steps=5, reward_scales=scales)
        env.reset(seed=3)
        action = np.zeros(env.action_space.shape, dtype=np.float32)
        return [env.step(action)[1] for _ in range(5)]

    plain = rewards(None)
    assert rewards({"reach-v3": 0.5}) == pytest.approx([0.5 * r for r in plain])
    assert rewards({"push-v3": 0.5}) == pytest.approx(plain)  # another environment's scale changes nothing
    assert any(r != 0 for r in plain)


def test_reward_scales_name_known_environments() -> None:
    from pydantic import ValidationError

    from amago_envs.suites.metaworld.specs import MetaworldConfig

    with pytest.raises(ValidationError, match=r"unknown Meta-World environment\(s\) \['reach-v9'\]"):
        MetaworldConfig(reward_scales={"reach-v9": 2.0})
    with pytest.raises(ValidationError, match="positive multipliers"):
        MetaworldConfig(reward_scales={"reach-v3": 0.0})
