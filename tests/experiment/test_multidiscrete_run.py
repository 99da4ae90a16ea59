"""MultiDiscrete actions end to end: collection, buffer files, training, ``load_policy`` and export on the
combination lock (3 dials of 4 symbols)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.plugins.registry import registries
from amago_tools.policy import load_policy

pytestmark = pytest.mark.slow  # a 3-epoch run, a load and an export: ~30 s on 2 cores


def test_a_multidiscrete_run_trains_loads_and_exports(tmp_path):
    args = [
        "run",
        "--env",
        "combination-lock",
        "--seed",
        "2",
        "--quiet",
        "-o",
        f"run.ckpt_base_dir={tmp_path}",
    ]
    args += ["-o", "run.name=lock", "-o", "run.torch_threads=1", "-o", "schedule.epochs=3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    run = tmp_path / "lock"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert any("train/Critic Loss" in r for r in records)  # it trained on the MultiDiscrete buffer files
    # The buffer stores one one-hot per dial: 12 action entries after the reward.
    spaces = json.loads((run / "spaces.json").read_text())
    assert spaces["agent"]["rl2_space"]["shape"] == [13]
    assert spaces["agent"]["action_space"]["type"] == "MultiDiscrete"

    env = registries().env_suites.build({"kind": "combination_lock"}).make_gym_env()
    policy = load_policy(run, sample=True)
    obs, _ = env.reset(seed=0)
    policy.reset()
    reward, done = None, False
    while not done:
        action = policy.act(obs, reward)
        assert action.shape == (3,)
        assert env.action_space.contains(np.asarray(action, dtype=env.action_space.dtype))
        obs, reward, terminated, truncated, _ = env.step(action)
        done = terminated or truncated

    exported = CliRunner().invoke(
        app, ["export", str(run), "--format", "torchscript", "--out", str(tmp_path / "x")]
    )
    assert exported.exit_code == 0, exported.output
    outputs = json.loads((tmp_path / "x" / "policy_step.json").read_text())["outputs"]
    assert outputs[0]["shape"][-1] == 3  # one index per dial
