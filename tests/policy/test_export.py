"""``export_policy`` / ``amago export``: the step function as TorchScript and ONNX, checked against the eager agent."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_envs.suites.tmaze import TMaze
from amago_nets import traj_transformer
from amago_nets.base import dones_as_mask
from amago_nets.kv_cache import KVCache
from amago_tools import export as export_module
from amago_tools import recorded as recorded_module
from amago_tools.export import export_policy
from amago_tools.policy import load_policy
from amago_tools.policy.memory import MemoryLayout

KV_CACHE_MEMORY = ["memory.keys", "memory.values", "memory.lengths", "memory.envs", "memory.rows"]

EPISODES = 3


def plain_loop(act, seed=5):
    """Actions of ``act(obs, reward, t)`` over a few T-Maze episodes (the runs' env, corridor 3)."""
    env, actions = TMaze(corridor_length=3), []
    for episode in range(EPISODES):
        obs, _ = env.reset(seed=seed + episode)
        reward, t, done = 0.0, 0, False
        while not done:
            action = act(obs, reward, t)
            actions.append(action)
            obs, reward, terminated, truncated, _ = env.step(action)
            done, t = terminated or truncated, t + 1
    return actions


def loaded_policy_actions(run_dir):
    policy = load_policy(run_dir)

    def act(obs, reward, t):
        if t == 0:
            policy.reset()
        return policy.act(obs, reward)

    return plain_loop(act)


def exported_actions(manifest, run_step):
    """Follows policy_step.json's protocol: rl2 and time_idx built by hand, memory from zeros."""
    memory = {m["name"]: np.zeros(m["shape"], dtype=m["dtype"]) for m in manifest["memory"]}
    n_actions = manifest["spaces"]["agent_action_space"]["n"]
    prev = {"action": np.zeros(n_actions, dtype=np.float32)}

    def act(obs, reward, t):
        rl2 = (
            np.concatenate([[reward], prev["action"]]).astype(np.float32)
            if t
            else np.zeros(1 + n_actions, np.float32)
        )
        feed = {"obs.observation": obs[None], "rl2": rl2[None], "time_idx": np.array([t]), **memory}
        action, *next_memory = run_step([feed[spec["name"]] for spec in manifest["inputs"]])
        memory.update({m["name"]: value for m, value in zip(manifest["memory"], next_memory, strict=True)})
        prev["action"] = np.eye(n_actions, dtype=np.float32)[int(action[0, 0])]
        return int(action[0, 0])

    return plain_loop(act)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch marks TorchScript deprecated
@pytest.mark.parametrize("encoder", ["ff", "rnn", "mamba", "transformer", "transformer-wrap"])
def test_torchscript_steps_like_the_loaded_policy(encoder, trained_run, tmp_path):
    report = export_policy(trained_run(encoder), tmp_path, formats=["torchscript"])
    (result,) = report.results
    assert result.error is None
    assert result.max_abs_diff <= export_module.TOLERANCE
    manifest = json.loads(report.manifest.read_text())
    assert manifest["files"]["torchscript"]["steps_checked"] == export_module.DEFAULT_CHECK_STEPS
    module = torch.jit.load(str(result.path))

    def run_step(inputs):
        return [t.numpy() for t in module(*map(torch.as_tensor, inputs))]

    assert exported_actions(manifest, run_step) == loaded_policy_actions(trained_run(encoder))
    assert [m["name"] for m in manifest["memory"]] == {
        "ff": [],
        "rnn": ["memory"],
        "mamba": ["memory.conv", "memory.ssm"],
        "transformer": KV_CACHE_MEMORY,
        "transformer-wrap": KV_CACHE_MEMORY,
    }[encoder]


@pytest.mark.slow
@pytest.mark.parametrize("encoder", ["rnn", "transformer", "transformer-wrap"])
def test_onnx_runs_in_onnxruntime_like_the_loaded_policy(encoder, trained_run, tmp_path):
    import onnxruntime

    report = export_policy(trained_run(encoder), tmp_path, formats=["onnx"])
    (result,) = report.results
    assert result.error is None
    assert result.path.name == "policy_step.onnx"
    manifest = json.loads(report.manifest.read_text())
    session = onnxruntime.InferenceSession(str(result.path), providers=["CPUExecutionProvider"])
    names = [spec["name"] for spec in manifest["inputs"]]

    def run_step(inputs):
        return session.run(None, dict(zip(names, inputs, strict=True)))

    assert exported_actions(manifest, run_step) == loaded_policy_actions(trained_run(encoder))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_a_transformer_steps_envs_at_different_lengths(trained_run, tmp_path, monkeypatch):
    # Made-up episodes of 1-12 steps: the envs restart at different times and wrap the 2-slot cache unevenly.
    monkeypatch.setattr(recorded_module._SuiteEnvs, "open", classmethod(lambda cls, *args: None))
    report = export_policy(trained_run("transformer-wrap"), tmp_path, n_envs=4)
    assert report.checked_on.startswith("64 steps of 4 made-up env(s)")
    assert [result.error for result in report.results] == [None, None]
    assert all(result.max_abs_diff <= export_module.TOLERANCE for result in report.results)
    manifest = json.loads(report.manifest.read_text())
    keys = manifest["memory"][0]
    assert (keys["name"], keys["shape"], keys["env_dim"]) == ("memory.keys", [2, 4, 2, 2, 16], 1)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_restarted_cache_rows_hold_no_stale_steps(trained_run, tmp_path, monkeypatch):
    # A reset that only masks the restarted rows' old steps: still correct actions, but the exported step
    # (which restarts an env with a fresh cache row) then disagrees on the memory after the first restart.
    def reset_masking_only(self, dones):
        return replace(
            self, lengths=self.lengths.masked_fill(dones_as_mask(dones, self.batch_size, "cpu"), 0)
        )

    monkeypatch.setattr(KVCache, "reset", reset_masking_only)
    (result,) = export_policy(trained_run("transformer"), tmp_path, formats=["torchscript"]).results
    assert "differs from the eager agent at recorded step 4" in result.error


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_several_envs_per_step(trained_run, tmp_path):
    report = export_policy(trained_run("rnn"), tmp_path, formats=["torchscript"], n_envs=3)
    assert report.results[0].error is None
    manifest = json.loads(report.manifest.read_text())
    assert manifest["n_envs"] == 3
    assert manifest["memory"] == [{"name": "memory", "shape": [1, 3, 32], "dtype": "float32", "env_dim": 1}]
    assert [spec["shape"] for spec in manifest["inputs"][:3]] == [[3, 2], [3, 5], [3]]


def test_a_file_that_differs_from_the_eager_agent_is_not_kept(trained_run, tmp_path, monkeypatch):
    # A step that never restarts the memory at an episode's start: right for the first episode only.
    monkeypatch.setattr(MemoryLayout, "restart_rows", lambda self, tensors, initial, starts: list(tensors))
    report = export_policy(trained_run("rnn"), tmp_path, formats=["torchscript"])
    (result,) = report.results
    assert result.path is None
    assert "differs from the eager agent at recorded step 4" in result.error
    assert report.manifest is None
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_step_that_branches_on_tensor_values_is_refused_in_one_line(trained_run, tmp_path, monkeypatch):
    # The Transformer's eager step, which plans its row groups from the cache lengths in Python, even when traced
    # (with one env torch.export follows it symbolically: two envs need a decision between their lengths).
    monkeypatch.setattr(traj_transformer, "capturing_graph", lambda: False)
    report = export_policy(trained_run("transformer-wrap"), tmp_path, n_envs=2)
    torchscript, onnx = report.results
    assert "differs from the eager agent" in torchscript.error
    assert "(row_groups.py:" in torchscript.error
    assert "traced graph cannot follow" in torchscript.error
    assert "ONNX exporter cannot follow the rollout step of traj encoder 'transformer'" in onnx.error
    assert " at row_groups.py:" in onnx.error
    assert "\n" not in torchscript.error + onnx.error
    assert list(tmp_path.iterdir()) == []


def invoke(*argv):
    return CliRunner().invoke(app, ["export", *map(str, argv)])


def test_cli_writes_the_files(trained_run, tmp_path):
    result = invoke(trained_run("ff"), "--out", tmp_path, "--format", "torchscript")
    assert result.exit_code == 0, result.output
    assert f"wrote {tmp_path / 'policy_step.pt'} (torchscript; max abs diff" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy_step.json", "policy_step.pt"]


def test_cli_errors_are_one_line(trained_run, tmp_path, monkeypatch):
    missing = invoke(tmp_path / "no-run")
    assert missing.exit_code == 2
    assert missing.output.count("\n") == 1
    assert "no run folder at" in missing.output
    monkeypatch.setattr(export_module, "onnx_available", lambda: False)
    only_onnx = invoke(trained_run("ff"), "--out", tmp_path, "--format", "onnx")
    assert only_onnx.exit_code == 2
    assert only_onnx.output.strip().endswith('pip install "amago-tools[export]"')


def test_cli_a_partial_export_succeeds_with_one_line_naming_what_it_skipped(
    trained_run, tmp_path, monkeypatch
):
    monkeypatch.setattr(export_module, "onnx_available", lambda: False)
    both = invoke(trained_run("ff"), "--out", tmp_path)
    assert both.exit_code == 0, both.output
    assert f"wrote {tmp_path / 'policy_step.pt'}" in both.stdout
    assert both.stderr == (
        'amago: warning: skipped onnx: ONNX needs onnx, onnxscript, onnxruntime: pip install "amago-tools[export]"\n'
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy_step.json", "policy_step.pt"]


@pytest.mark.slow
def test_cli_fails_when_no_format_was_written(trained_run, tmp_path, monkeypatch):
    # A step that never restarts the memory: every format fails its check, so nothing is written.
    monkeypatch.setattr(MemoryLayout, "restart_rows", lambda self, tensors, initial, starts: list(tensors))
    result = invoke(trained_run("rnn"), "--out", tmp_path)
    assert result.exit_code == 1
    assert result.stdout == ""
    torchscript, onnx = result.stderr.splitlines()
    assert torchscript.startswith(
        "amago: error: torchscript: the TorchScript step differs from the eager agent"
    )
    assert onnx.startswith("amago: error: onnx: the ONNX step differs from the eager agent")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_exported_files_get_the_mode_a_plain_open_gives(trained_run, tmp_path):
    # The files are written to private temp files first; the kept ones must be readable like any other file
    # (another user's process on a shared filesystem loads them).
    previous = os.umask(0o022)
    try:
        report = export_policy(trained_run("rnn"), tmp_path, formats=["torchscript", "onnx"])
    finally:
        os.umask(previous)
    assert [result.error for result in report.results] == [None, None]
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in tmp_path.iterdir()}
    assert modes == {"policy_step.pt": 0o644, "policy_step.onnx": 0o644, "policy_step.json": 0o644}
