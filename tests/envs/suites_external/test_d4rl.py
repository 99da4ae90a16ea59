"""The ``d4rl`` suite: minari episodes into the protected buffer (AMAGO's layout), the eval env, offline->online."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

from amago_core.data.disk_buffer import DiskTrajDataset
from amago_core.data.files import load_traj, parse_traj_file_name
from amago_core.plugins.registry import registries
from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX
from amago_envs.suites.d4rl.specs import D4RL

minari = pytest.importorskip("minari")
gymnasium = pytest.importorskip("gymnasium")

from amago_envs.suites.d4rl.convert import convert_dataset, main, policy_actions  # noqa: E402
from amago_envs.suites.d4rl.datasets import DatasetNotFoundError, load_local_dataset  # noqa: E402
from amago_envs.suites.d4rl.env import NormalizedReturnLogger  # noqa: E402

DATASET = "amagotest/pendulum-random-v0"
EPISODES, STEPS = 3, 12


OFFLINE_THEN_ONLINE = [
    f"env.dataset={DATASET}", "traj_encoder.d_hidden=16", "traj_encoder.d_output=16",
    "tstep_encoder.d_hidden=16", "tstep_encoder.d_output=16", "run.max_seq_len=4", "replay.traj_save_len=13",
    "rollout.parallel_actors=2", "schedule.epochs=2", "schedule.start_collecting_at_epoch=1",
    "schedule.train_timesteps_per_epoch=13", "schedule.train_batches_per_epoch=2", "schedule.val_interval=1",
    "schedule.val_timesteps_per_epoch=13", "optim.batch_size=2", "logging.plot=false",
]  # fmt: skip
"""``-o`` settings of two tiny epochs: offline on the converted data, then collecting from epoch 1."""


@pytest.fixture(scope="module")
def minari_root(tmp_path_factory):
    """A tiny random-policy Pendulum dataset in a temp MINARI_DATASETS_PATH (no downloads)."""
    root = tmp_path_factory.mktemp("minari")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MINARI_DATASETS_PATH", str(root))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # minari's metadata advice (author, description...)
            env = minari.DataCollector(gymnasium.make("Pendulum-v1", max_episode_steps=STEPS))
            env.action_space.seed(0)
            for episode in range(EPISODES):
                env.reset(seed=episode)
                done = False
                while not done:
                    _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                    done = terminated or truncated
            env.create_dataset(
                dataset_id=DATASET, algorithm_name="random", ref_min_score=-1000.0, ref_max_score=0.0
            )
            env.close()
        yield root


@pytest.fixture
def local(minari_root, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(minari_root))
    return minari_root


def test_converted_files_hold_the_episodes_in_amago_layout(local, tmp_path) -> None:
    files = convert_dataset(DATASET, tmp_path, "run")
    assert len(files) == EPISODES
    assert all(f.parent == tmp_path / "run" / "buffer" / "protected" for f in files)
    assert all(parse_traj_file_name(f.name)[0] == "amagotest-pendulum-random-v0" for f in files)
    episodes = list(load_local_dataset(DATASET).iterate_episodes())
    for path, episode in zip(files, episodes, strict=True):
        traj = load_traj(path)
        assert set(traj.obs) == {"observation"}
        np.testing.assert_allclose(traj.obs["observation"], episode.observations)
        assert len(traj) == STEPS
        assert traj.time_idxs[:, 0].tolist() == list(range(STEPS + 1))
        np.testing.assert_allclose(
            traj.actions, episode.actions / 2.0, rtol=1e-6
        )  # Pendulum's [-2, 2] -> [-1, 1]
        np.testing.assert_allclose(traj.rews[:, 0], episode.rewards, rtol=1e-6)
        assert not traj.dones.any()  # time-limit truncations are not terminal
        assert (traj.rl2s[0] == 0).all()
        np.testing.assert_allclose(traj.rl2s[1:, 0], episode.rewards, rtol=1e-6)
        np.testing.assert_allclose(traj.rl2s[1:, 1:], traj.actions)
    buffer = DiskTrajDataset(tmp_path, "run", dset_max_size=10)
    assert len(buffer.protected_files) == EPISODES
    assert not buffer.fifo_files


def test_policy_actions_for_discrete_and_box() -> None:
    discrete = policy_actions(np.array([2, 0, 1]), gymnasium.spaces.Discrete(3))
    np.testing.assert_array_equal(discrete, np.eye(3, dtype=np.float32)[[2, 0, 1]])
    box = gymnasium.spaces.Box(low=np.array([0.0, -4.0], np.float32), high=np.array([1.0, 4.0], np.float32))
    np.testing.assert_allclose(
        policy_actions(np.array([[0.5, 4.0], [0.0, -2.0]]), box), [[0.0, 1.0], [-1.0, -0.5]]
    )
    with pytest.raises(ValueError, match="finite bounds"):
        policy_actions(np.zeros((1, 1)), gymnasium.spaces.Box(-np.inf, np.inf, shape=(1,)))


def test_missing_dataset_names_the_local_ones(local, tmp_path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"not available locally.*amagotest/pendulum-random-v0"):
        convert_dataset("mujoco/halfcheetah/medium-v0", tmp_path, "run")
    assert main(["mujoco/halfcheetah/medium-v0", "--ckpt-base-dir", str(tmp_path), "--run-name", "r"]) == 2
    assert main([DATASET, "--ckpt-base-dir", str(tmp_path), "--run-name", "r", "--max-episodes", "2"]) == 0
    assert len(list((tmp_path / "r" / "buffer" / "protected").glob("*.npz"))) == 2


def test_suite_makes_the_dataset_env_with_normalized_return(local) -> None:
    suite = registries().env_suites.build({"kind": "d4rl", "dataset": DATASET})
    env = suite.make_env("val")
    assert env.env_name == "amagotest-pendulum-random-v0"
    timestep, _ = env.reset(seed=0)
    assert timestep.obs["observation"].shape == (1, 3)
    total = 0.0
    for _ in range(STEPS):
        timestep, reward, terminated, truncated, info = env.step(np.zeros((1, 1), dtype=np.float32))
        total += float(reward[0])
    assert truncated.all()
    assert not terminated.any()
    assert info[f"{AMAGO_ENV_LOG_PREFIX} D4RL Normalized Return"] == pytest.approx(
        100 * (total + 1000) / 1000, rel=1e-5
    )
    short = (
        registries()
        .env_suites.build({"kind": "d4rl", "dataset": DATASET, "max_episode_steps": 3})
        .make_env("train")
    )
    short.reset(seed=0)
    dones = [bool(short.step(np.zeros((1, 1), dtype=np.float32))[3][0]) for _ in range(3)]
    assert dones == [False, False, True]
    with pytest.raises(ValueError, match=r"env\.dataset"):
        registries().env_suites.build({"kind": "d4rl"}).make_env("train")
    with pytest.raises(ValueError, match="differ"):
        NormalizedReturnLogger(gymnasium.make("Pendulum-v1"), 1.0, 1.0)


def test_cli_offline_then_online(local, tmp_path, dry_run, run_tiny) -> None:
    convert_dataset(DATASET, tmp_path, "offon")
    config = dry_run("d4rl", "-o", f"env.dataset={DATASET}")
    assert config["agent"]["online_coeff"] == 0.0
    assert config["agent"]["offline_coeff"] == 1.0
    assert config["agent"]["num_critics"] == 5
    assert config["agent"]["continuous_dist"]["type"] == "beta"
    assert config["schedule"]["start_collecting_at_epoch"] >= 10**9  # offline only unless asked
    summary = run_tiny("d4rl", "--traj-encoder", "gru", overrides=OFFLINE_THEN_ONLINE, name="offon")
    assert summary["gradient_steps"] == 4  # epoch 0 trained on the converted data alone
    assert summary["total_frames"] == 26  # collection started at epoch 1 only
    buffer = tmp_path / "offon" / "buffer"
    assert len(list((buffer / "protected").glob("*.npz"))) == EPISODES
    assert list((buffer / "fifo").glob("*.npz"))
    assert "Average D4RL Normalized Return in amagotest-pendulum-random-v0" in summary["final_test"]


def test_specs_module_imports_no_heavy_library(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.d4rl.specs", ("torch", "gymnasium", "minari"))


def test_missing_minari_reports_the_install_hint(assert_missing_extra) -> None:
    assert_missing_extra(D4RL, "minari", "d4rl", build={"kind": "d4rl", "dataset": DATASET})


def test_cli_hook_adds_d4rl_convert(local, tmp_path) -> None:
    import typer

    from amago_envs.suites.d4rl import cli_hooks

    cli = typer.Typer()
    cli.command("noop")(lambda: None)  # a second command keeps typer in multi-command mode, like `amago`
    cli_hooks.amago_cli_commands(app=cli)
    ok = CliRunner().invoke(
        cli, ["d4rl-convert", DATASET, "--run-name", "r", "--ckpt-base-dir", str(tmp_path)]
    )
    assert ok.exit_code == 0, ok.output
    assert f"wrote {EPISODES} episodes" in ok.stdout
    assert len(list((tmp_path / "r" / "buffer" / "protected").glob("*.npz"))) == EPISODES
    missing = CliRunner().invoke(cli, ["d4rl-convert", "nope/nope-v0", "--run-name", "r"])
    assert missing.exit_code == 2
    assert "not available locally" in missing.stderr


def test_cli_hook_module_is_import_cheap(assert_imports_clean) -> None:
    assert_imports_clean("amago_envs.suites.d4rl.cli_hooks", ("torch", "gymnasium", "minari", "numpy"))
