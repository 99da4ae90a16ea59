"""Failing loudly in one line: bad env data at collection, a non-finite loss, broken plugins; clean stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app

runner = CliRunner()
AMAGO = [sys.executable, "-m", "amago_core.cli.app"]

NAN_SUITE = '''
from typing import Literal
from amago_core.config import EnvSuiteConfig
from amago_core.plugins import ComponentSpec

class NanConfig(EnvSuiteConfig):
    kind: Literal["nanny"] = "nanny"
    """Registered name."""
    bad_step: int = 5
    """Step whose reward is NaN."""

SPEC = ComponentSpec(name="nanny", group="amago.env_suites", summary="NaN rewards", config=NanConfig,
                     factory="nanny_pkg.suite:NanSuite")
'''

NAN_ENV = """
import gymnasium as gym
import numpy as np
from amago_core.rollout import AMAGOEnv

class NanEnv(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, bad_step):
        self.bad_step, self.t = bad_step, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        reward = float("nan") if self.t == self.bad_step else 1.0
        return np.zeros(2, np.float32), reward, False, self.t >= 10, {}

class NanSuite:
    def __init__(self, config):
        self.config = config

    def make_env(self, split):
        return AMAGOEnv(NanEnv(self.config.bad_step), env_name="Nanny")
"""

TINY = [
    "--traj-encoder", "gru", "-o", "traj_encoder.d_hidden=8", "-o", "traj_encoder.d_output=8",
    "-o", "tstep_encoder.d_hidden=8", "-o", "tstep_encoder.d_output=8", "-o", "rollout.parallel_actors=2",
    "-o", "run.max_seq_len=8", "-o", "replay.traj_save_len=8", "-o", "optim.batch_size=2",
    "-o", "schedule.epochs=3", "-o", "schedule.train_timesteps_per_epoch=4",
    "-o", "schedule.train_batches_per_epoch=2", "-o", "schedule.val_interval=null", "--quiet",
]  # fmt: skip


def test_a_nan_reward_stops_the_run_at_collection_with_one_line(fake_distribution, tmp_path):
    fake_distribution(
        "amago-plugin-nanny",
        entry_points={"amago.env_suites": {"nanny": "nanny_pkg.specs:SPEC"}},
        modules={"nanny_pkg/__init__.py": "", "nanny_pkg/specs.py": NAN_SUITE, "nanny_pkg/suite.py": NAN_ENV},
    )
    base = tmp_path / "runs"
    result = runner.invoke(
        app, ["run", "--env", "nanny", "--name", "nan", "-o", f"run.ckpt_base_dir={base}", *TINY]
    )
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1
    assert "env 'Nanny' returned a non-finite reward (nan) at step 5 of an episode" in result.stderr
    assert "The newest complete checkpoint is epoch 0" in result.stderr  # the NaN comes in epoch 1
    for path in (base / "nan" / "buffer").rglob("*.npz"):  # nothing non-finite reached the buffer
        with np.load(path) as data:
            assert all(np.isfinite(data[k]).all() for k in data.files if data[k].dtype.kind == "f")


def test_a_non_finite_loss_stops_with_one_line_and_tells_which_checkpoint_exists(
    tiny_job, tmp_path, monkeypatch
):
    from amago_agents.agent import Agent

    original = Agent.loss_terms
    calls = {"n": 0}

    def poisoned(self, *args, **kwargs):
        actor, critic = original(self, *args, **kwargs)
        calls["n"] += 1
        return (actor * float("nan"), critic) if calls["n"] > 8 else (actor, critic)

    monkeypatch.setattr(Agent, "loss_terms", poisoned)
    job = tmp_path / "job.json"
    job.write_text(json.dumps(tiny_job))
    result = runner.invoke(app, ["run", "-c", str(job), "-o", "schedule.epochs=5", "--quiet"])
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1
    line = result.stderr
    assert "the actor loss is nan; stopped before it reached the parameters" in line
    assert "The newest complete checkpoint is epoch 1" in line  # 4 updates per epoch: the 9th is in epoch 2
    assert "Traceback" not in result.output


BROKEN_FACTORY = '''
from typing import Literal
from amago_core.config import ComponentConfig
from amago_core.plugins import ComponentSpec

class BrokenConfig(ComponentConfig):
    kind: Literal["{name}"] = "{name}"
    """Registered name."""

SPEC = ComponentSpec(name="{name}", group="amago.traj_encoders", summary="broken", config=BrokenConfig,
                     factory="broken_pkg.{module}:Encoder")
'''


@pytest.fixture
def broken_plugins(fake_distribution):
    fake_distribution(
        "amago-plugin-broken",
        entry_points={
            "amago.traj_encoders": {
                "unimportable": "broken_pkg.specs_a:SPEC",
                "explodes": "broken_pkg.specs_b:SPEC",
            }
        },
        modules={
            "broken_pkg/__init__.py": "",
            "broken_pkg/specs_a.py": BROKEN_FACTORY.format(name="unimportable", module="missing_module"),
            "broken_pkg/specs_b.py": BROKEN_FACTORY.format(name="explodes", module="explodes"),
            "broken_pkg/explodes.py": (
                "class Encoder:\n"
                "    def __init__(self, config, **context):\n"
                "        raise ValueError('this encoder needs a GPU with 80 GB')\n"
            ),
        },
    )


@pytest.mark.usefixtures("broken_plugins")
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("unimportable", "cannot import its factory 'broken_pkg.missing_module:Encoder'"),
        (
            "explodes",
            "traj_encoder 'explodes' from amago-plugin-broken==1.0.0 failed to build: ValueError: this",
        ),
    ],
)
def test_a_broken_factory_is_one_line_and_leaves_no_run_folder(tiny_job, tmp_path, name, expected):
    job = tmp_path / "job.json"
    job.write_text(json.dumps({k: v for k, v in tiny_job.items() if k != "traj_encoder"}))
    result = runner.invoke(app, ["run", "-c", str(job), "--traj-encoder", name, "--quiet"])
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1
    assert expected in result.stderr
    if name == "unimportable":
        assert "amago-plugin-broken" in result.stderr
    assert not (tmp_path / "runs" / "tiny").exists()


@pytest.mark.slow
@pytest.mark.usefixtures("broken_plugins")
def test_doctor_imports_every_factory_and_reports_the_broken_one():
    result = runner.invoke(app, ["doctor", "--json"])
    assert result.exit_code == 1
    errors = json.loads(result.stdout)["errors"]
    broken = [e for e in errors if e.startswith("traj-encoders:unimportable")]
    assert len(broken) == 1
    # Found without importing (listing's cheap check): the factory's module does not exist.
    assert "its factory module 'broken_pkg.missing_module' does not exist" in broken[0]
    assert "amago-plugin-broken" in broken[0]


def _start_long_run(tiny_job: dict, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    job = json.loads(json.dumps(tiny_job))
    job["schedule"].update(epochs=10_000, ckpt_interval=1000, train_batches_per_epoch=50)
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(job))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [*AMAGO, "run", "-c", str(job_file)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    latest = tmp_path / "runs" / "tiny" / "ckpts" / "latest"
    deadline = time.monotonic() + 180
    while not list(latest.glob("state_epoch_1/progress.json")):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"the run did not reach epoch 1: {proc.communicate()[1][-2000:]}")
        time.sleep(0.1)
    return proc, latest


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_finishes_the_step_saves_a_checkpoint_and_says_so(tiny_job, tmp_path, sig):
    proc, latest = _start_long_run(tiny_job, tmp_path)
    time.sleep(0.3)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err[-2000:]
    summary = json.loads(out[out.index('{\n  "run_dir"') :])
    assert summary["stopped_by"] == sig.name
    saved = json.loads(max(latest.glob("state_epoch_*/progress.json")).read_text())
    assert saved["epoch"] == summary["epochs_done"] - 1  # the interrupted epoch is the one saved
    assert saved["grad_update_counter"] == summary["gradient_steps"]
    assert f"amago: {sig.name} received: stopping after the current step" in err
    assert f"amago: stopped by {sig.name} after epoch {saved['epoch']}" in err
    assert "--resume" in err.splitlines()[-1]


@pytest.mark.slow
def test_a_second_ctrl_c_aborts_at_once(tiny_job, tmp_path):
    proc, _ = _start_long_run(tiny_job, tmp_path)
    proc.send_signal(signal.SIGINT)
    # Two signals sent at once can arrive as one; send the second once the first was handled (as a person would).
    while "received: stopping after the current step" not in proc.stderr.readline():
        pass
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "aborted (Ctrl-C twice)" in err.splitlines()[-1]
