"""The masked agent learns the masked bandit (arm 0 on even steps, arm 1 on odd ones: return 6 of 6) and never
pulls an illegal arm; the policy loaded from its folder and the exported step take the mask too."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_envs.suites.masked_bandit import MaskedBandit
from amago_tools.policy import load_policy

pytestmark = pytest.mark.slow  # one ~60 s training run on 2 cores


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--env",
            "masked-bandit",
            "--seed",
            "1",
            "--quiet",
            "-o",
            f"run.ckpt_base_dir={base}",
            "-o",
            "run.name=masked",
            "-o",
            "run.torch_threads=1",
            "-o",
            "schedule.epochs=20",
        ],
    )
    assert result.exit_code == 0, result.output
    return base / "masked"


def test_the_masked_agent_learns_the_best_legal_play(trained):
    records = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    test = next(r for r in reversed(records) if "test/Average Total Return in MaskedBandit-H8" in r)
    assert test["test/Average Total Return in MaskedBandit-H8"] >= 5.5  # best: 4 x 1 + 4 x 0.5 = 6
    illegal = [v for r in records for k, v in r.items() if k.endswith("illegal actions in MaskedBandit-H8")]
    assert illegal  # logged at the end of every training and test episode
    assert max(illegal) == 0  # exploration included: not one illegal pull in training or tests


def test_the_loaded_policy_reads_the_mask_from_info(trained):
    policy = load_policy(trained, sample=True)
    env = MaskedBandit(horizon=200, mask_in="info")
    obs, info = env.reset(seed=0)
    policy.reset()
    reward, done = None, False
    while not done:
        action = policy.act(obs, reward, info=info)
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert env.illegal == 0
    with pytest.raises(ValueError, match=r"info\['legal'\]: pass act\(obs, reward, info=info\)"):
        policy.act(obs, reward)


def test_the_exported_step_takes_the_mask_as_an_input(trained, tmp_path):
    result = CliRunner().invoke(
        app, ["export", str(trained), "--format", "torchscript", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    inputs = json.loads((tmp_path / "policy_step.json").read_text())["inputs"]
    mask = next(i for i in inputs if i["name"] == "obs.action_mask")
    assert (mask["dtype"], mask["shape"][-1]) == ("bool", 3)
