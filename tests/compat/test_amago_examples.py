"""AMAGO v3.3.0's example scripts run unmodified on amago, with their own command lines.

Each test runs one script of ``../shared/baselines/amago-3.3.0/examples`` as a separate program
(``python <script> <AMAGO's flags>``) in a temporary folder, with tiny settings given through the script's own flags,
and checks that it exits 0 and wrote a run folder with a checkpoint or metrics. A script whose env suite is not
installed is skipped, naming the module. The scripts are AMAGO's, read from the baseline folder, never copied.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO.parent / "shared" / "baselines" / "amago-3.3.0" / "examples"

TINY = [
    "--epochs", "1",
    "--timesteps_per_epoch", "25",
    "--batches_per_epoch", "2",
    "--parallel_actors", "2",
    "--env_mode", "sync",
    "--no_log",
    "--memory_size", "16",
    "--memory_layers", "1",
    "--dloader_workers", "0",
    "--batch_size", "4",
]  # fmt: skip
"""AMAGO's ``add_common_cli`` flags that make a run tiny."""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"AMAGO's examples are not at {EXAMPLES}"),
]


def _needs(*modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the script's env suite needs the module {module!r}, which is not installed")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(WANDB_MODE="disabled", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    return env


def _run(script: str, args: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    path = EXAMPLES / script
    result = subprocess.run(
        [sys.executable, str(path), *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, (
        f"{script} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    )
    return result


def _run_folder(buffer_dir: Path, run_name: str) -> Path:
    run = buffer_dir / run_name
    assert (run / "config.resolved.json").is_file(), sorted(p.name for p in buffer_dir.iterdir())
    checkpoints = list((run / "ckpts").rglob("*.safetensors")) if (run / "ckpts").is_dir() else []
    metrics = run / "metrics.jsonl"
    assert checkpoints or (metrics.is_file() and metrics.read_text().strip()), (
        f"no checkpoint or metrics in {run}"
    )
    return run


def test_04_tmaze_runs_unchanged_with_its_exploration_subclass(tmp_path):
    _run("04_tmaze.py", ["--horizon", "10", "--run_name", "x", "--buffer_dir", "d", *TINY], tmp_path)
    run = _run_folder(tmp_path / "d", "x_TMazePassive_H10_trial_0")
    record = (run / "config.resolved.json").read_text()
    assert "TMazeExploration" in record  # the script's own class explored, built as AMAGO built it


def test_04_tmaze_runs_in_amagos_default_async_mode(tmp_path):
    # Async workers are fresh processes: the script's class and its gin bindings must reach them.
    args = [a for a in TINY if a not in ("--env_mode", "sync")]
    _run("04_tmaze.py", ["--horizon", "6", "--run_name", "x", "--buffer_dir", "d", *args], tmp_path)
    _run_folder(tmp_path / "d", "x_TMazePassive_H6_trial_0")


def test_01_basic_gym_runs_unchanged(tmp_path):
    args = ["--env", "CartPole-v1", "--max_seq_len", "8", "--eval_timesteps", "20", "--traj_encoder", "ff"]
    _run("01_basic_gym.py", [*args, "--run_name", "x", "--buffer_dir", "d", *TINY], tmp_path)
    _run_folder(tmp_path / "d", "x_CartPole-v1_trial_0")


def test_03_popgym_runs_unchanged(tmp_path):
    _needs("popgym")
    args = ["--env", "RepeatPreviousEasy", "--max_seq_len", "16"]
    result = _run("03_popgym_suite.py", [*args, "--run_name", "x", "--buffer_dir", "d", *TINY], tmp_path)
    run = _run_folder(tmp_path / "d", "x_RepeatPreviousEasy_trial_0")
    record = (run / "config.resolved.json").read_text()
    # The script's gin values: FlashAttention and the learnable positions, and its 18 discount factors.
    assert '"attention": "flash"' in record, result.stdout[-2000:]
    assert '"pos_emb": "learnable"' in record
    assert "0.9995" in record


def test_12_half_cheetah_vel_runs_unchanged(tmp_path):
    _needs("mujoco")
    args = ["--policy_seq_len", "8", "--eval_episodes_per_actor", "0"]
    _run("12_half_cheetah_vel.py", [*args, "--run_name", "x", "--buffer_dir", "d", *TINY], tmp_path)
    run = _run_folder(tmp_path / "d", "x_trial_0")
    # The script's AMAGOEnv subclass names each env by its target velocity.
    assert "HalfCheetahVelocity-Vel-[" in (run / "metrics.jsonl").read_text()


def test_13_mazerunner_relabeling_runs_unchanged(tmp_path):
    args = ["--maze_size", "7", "--goals", "2", "--time_limit", "12", "--relabel", "all"]
    tiny = [*TINY]
    tiny[tiny.index("--epochs") + 1] = "2"  # the second epoch trains on relabeled files of the first
    _run("13_mazerunner_relabeling.py", [*args, "--run_name", "x", "--buffer_dir", "d", *tiny], tmp_path)
    run = _run_folder(tmp_path / "d", "x_trial_0")
    assert '"updates"' in (run / "metrics.jsonl").read_text() or list((run / "ckpts").rglob("*.safetensors"))


def test_00_meta_frozen_lake_starts_unchanged(tmp_path):
    # 00 has its own parser: 700 epochs x 1000 updates and 32 actors are fixed in the script, with no flag to
    # shrink them, so the test stops it once it has built the experiment and its actors wrote trajectories.
    args = [
        "--seq_model",
        "ff",
        "--run_name",
        "x",
        "--buffer_dir",
        "d",
        "--lake_size",
        "3",
        "--k_episodes",
        "1",
    ]
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "00_meta_frozen_lake.py"), *args],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    run = tmp_path / "d" / "x_ff_trial_0"
    deadline = time.monotonic() + 120
    wrote = False
    try:
        while time.monotonic() < deadline and process.poll() is None:
            # Seen while it runs: once stopped, the script goes on to its test pass and deletes its buffer.
            wrote = (run / "config.resolved.json").is_file() and any((run / "buffer").rglob("*.npz"))
            if wrote:
                break
            time.sleep(0.5)
        alive = process.poll() is None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        output, _ = process.communicate(timeout=60)
    assert alive, f"00_meta_frozen_lake.py exited {process.returncode}:\n{output[-5000:]}"
    assert wrote, output[-5000:]


# ---- the pattern of AMAGO's examples 02, 07, 08, 10 and 11, whose files are not in the baseline folder ----------
SCRIPTS = Path(__file__).parent / "fixtures" / "amago_scripts"
"""Scripts written here in those examples' pattern (AMAGO's imports, cli_utils, a script's own encoder)."""


def _run_script(script: str, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / script), *args],
        cwd=cwd,
        env={**_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, (
        f"{script} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    )


def test_02_gymnax_pattern_runs_already_vectorized(tmp_path):
    _needs("gymnax")
    args = [
        "--env",
        "MemoryChain-bsuite",
        "--max_seq_len",
        "8",
        "--eval_timesteps",
        "10",
        "--traj_encoder",
        "ff",
    ]
    _run_script("gymnax_script.py", [*args, "--run_name", "x", "--buffer_dir", "d", *TINY], tmp_path)
    run = _run_folder(tmp_path / "d", "x_MemoryChain-bsuite_trial_0")
    assert '"already_vectorized"' in (run / "config.resolved.json").read_text()


def test_07_metaworld_pattern_runs(tmp_path):
    _needs("metaworld")
    args = ["--benchmark", "reach-v2", "--k", "1", "--max_seq_len", "8", "--traj_encoder", "ff"]
    _run_script("metaworld_script.py", [*args, "--run_name", "x", "--buffer_dir", "d", *TINY], tmp_path)
    run = _run_folder(tmp_path / "d", "x_metaworld_reach-v2_K_1_L_8_trial_0")
    record = (run / "config.resolved.json").read_text()
    assert '"rollout_horizon": 500' in record  # switch_exploration's bilevel horizon
    assert '"num_critics": 4' in record  # switch_agent's keyword


def test_08_ale_pattern_runs_with_actors_pinned_to_games(tmp_path):
    _needs("ale_py", "cv2")
    args = ["--games", "Pong", "Breakout", "--max_seq_len", "4", "--cnn", "nature", "--traj_encoder", "ff"]
    tiny = [*TINY]
    tiny[tiny.index("--timesteps_per_epoch") + 1] = "8"
    _run_script("ale_script.py", [*args, "--run_name", "x", "--buffer_dir", "d", *tiny], tmp_path)
    run = _run_folder(tmp_path / "d", "x_atari_l_4_cnn_nature_trial_0")
    assert '"cnn_type": "nature"' in (run / "config.resolved.json").read_text()


def test_10_babyai_pattern_runs_with_a_scripts_encoder(tmp_path):
    _needs("minigrid", "cv2")
    args = ["--k_episodes", "1", "--train_seeds", "10", "--max_seq_len", "8", "--traj_encoder", "ff"]
    _run_script("babyai_script.py", [*args, "--run_name", "x", "--buffer_dir", "d", *TINY], tmp_path)
    run = _run_folder(tmp_path / "d", "x_babyai_partial-grid_trial_0")
    assert ":BabyTstepEncoder" in (run / "config.resolved.json").read_text()  # given as functools.partial


def test_11_xland_pattern_runs_already_vectorized(tmp_path):
    _needs("xminigrid")
    import bz2
    import pickle

    from xminigrid import benchmarks

    from amago_envs.suites.xland.rulesets import generate_rulesets

    data = tmp_path / "xland_data"  # a small stand-in for the downloaded small-1m file
    data.mkdir()
    pool = generate_rulesets(20, 1, 1, seed=0)
    with bz2.open(data / benchmarks.NAME2HFFILENAME["small-1m"], "wb") as file:
        pickle.dump({"goals": pool.goals, "rules": pool.rules, "init_tiles": pool.init_tiles}, file)
    args = ["--k_shots", "1", "--max_seq_len", "8", "--traj_encoder", "ff"]
    tiny = [*TINY]
    tiny[tiny.index("--timesteps_per_epoch") + 1] = "10"
    env = {"XLAND_MINIGRID_DATA": str(data)}
    _run_script("xland_script.py", [*args, "--run_name", "x", "--buffer_dir", "d", *tiny], tmp_path, env)
    run = _run_folder(tmp_path / "d", "x_xlandmg_small-1m_R1_9x9_trial_0")
    assert "XLandMGTstepEncoder" in (run / "config.resolved.json").read_text()
