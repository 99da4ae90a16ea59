"""``load_policy``: a run's policy in a plain gymnasium loop acts as the experiment loop's evaluation does."""

from __future__ import annotations

import contextlib
import functools
import json
import shutil

import numpy as np
import pytest
import torch

from amago_core.experiment.acting import run_policy
from amago_core.plugins.registry import registries
from amago_core.rollout import EnvCreator, make_pool
from amago_nets.kv_cache import KVCache
from amago_tools.policy import PolicyLoadError, load_policy
from amago_tools.policy.memory import MemoryLayout

SEED = 11
STEPS = 12  # three T-Maze episodes of 4 steps per env


class RecordingPool:
    """A vector pool that records the actions it is stepped with."""

    def __init__(self, pool):
        self.pool = pool
        self.num_envs = pool.num_envs
        self.actions = []

    def step(self, actions):
        self.actions.append(np.asarray(actions).copy())
        return self.pool.step(actions)

    def __getattr__(self, name):
        return getattr(self.pool, name)


class RecordingAgent:
    """The agent, recording its memory after every ``get_actions`` (flattened)."""

    def __init__(self, agent, layout):
        self.agent, self.layout, self.memories = agent, layout, []

    def get_actions(self, *args, **kwargs):
        actions, memory = self.agent.get_actions(*args, **kwargs)
        self.memories.append([t.clone() for t in self.layout.flatten(memory)])
        return actions, memory

    def __getattr__(self, name):
        return getattr(self.agent, name)


def suite_envs(run_dir, n):
    """``n`` envs of the run's suite: the AMAGOEnv maker and the plain gymnasium envs inside such envs."""
    config = json.loads((run_dir / "config.resolved.json").read_text())
    suite = registries().env_suites.build(config["env"])
    return functools.partial(suite.make_env, "test"), [suite.make_env("test").env for _ in range(n)]


@pytest.mark.parametrize("encoder", ["ff", "rnn", "transformer"])
def test_a_plain_gymnasium_loop_acts_as_the_evaluation_loop(encoder, trained_run):
    run_dir = trained_run(encoder)
    policy = load_policy(run_dir)
    layout = MemoryLayout.of(policy.agent, 2)

    # The experiment loop's evaluation path: a pool of AMAGOEnvs stepped by run_policy with argmax actions.
    make_env, gym_envs = suite_envs(run_dir, 2)
    pool = RecordingPool(make_pool("sync", [EnvCreator(make_env=make_env)] * 2, stack=False))
    recorder = RecordingAgent(policy.agent, layout)
    run_policy(
        recorder,
        pool,
        STEPS,
        device=torch.device("cpu"),
        caster=contextlib.nullcontext,
        timestep=pool.reset(seed=SEED),
        sample=False,
    )
    pool.close()

    # The same envs, plain gymnasium, with the loaded policy.
    policy.reset(2)
    obs = np.stack([env.reset(seed=SEED + i)[0] for i, env in enumerate(gym_envs)])
    reward, done = np.zeros(2), np.zeros(2, dtype=bool)
    for step in range(STEPS):
        action = policy.act(obs, reward, done)
        np.testing.assert_array_equal(action, pool.actions[step][:, 0], err_msg=f"step {step}")
        for got, want in zip(layout.flatten(policy.memory), recorder.memories[step], strict=True):
            torch.testing.assert_close(got, want, rtol=0, atol=0, msg=f"memory at step {step}")
        rows = [env.step(int(a)) for env, a in zip(gym_envs, action, strict=True)]
        reward = np.array([row[1] for row in rows])
        done = np.array([row[2] or row[3] for row in rows])
        obs = np.stack(
            [env.reset()[0] if d else row[0] for env, row, d in zip(gym_envs, rows, done, strict=True)]
        )
    assert done.any()  # episodes ended (and restarted) along the way


def env_memory(memory, env):
    """One env's memory, whatever the row it sits in (GRU state rows; the KV cache's valid slots)."""
    if memory is None:
        return []
    if isinstance(memory, KVCache):
        row, steps = int(memory.rows[env]), int(min(memory.lengths[env], memory.context))
        layers = range(memory.keys.shape[0])
        return [
            memory.lengths[env],
            *(memory.layer_keys(layer)[row, :steps] for layer in layers),
            *(memory.layer_values(layer)[row, :steps] for layer in layers),
        ]
    return [memory[:, env]]


@pytest.mark.parametrize("encoder", ["rnn", "transformer"])
def test_each_env_keeps_its_own_memory(encoder, trained_run):
    run_dir = trained_run(encoder)
    together, alone = load_policy(run_dir), load_policy(run_dir)
    together.reset(2)
    alone.reset(1)
    rng = np.random.default_rng(0)
    restarts = {2, 3, 7}  # env 0 restarts its episode at these steps; env 1 runs one long episode
    for step in range(14):
        obs = rng.uniform(-1, 1, size=(2, 2)).astype(np.float32)
        reward = rng.normal(size=2)
        action = together.act(obs, reward, done=[step in restarts, False])
        assert action[1] == alone.act(obs[1], reward[1])
        for got, want in zip(env_memory(together.memory, 1), env_memory(alone.memory, 0), strict=True):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert together.time_idx.tolist() == [7, 14]  # env 0's last episode began at step 7


def test_a_run_without_spaces_json_builds_them_from_its_env_suite(trained_run, tmp_path):
    copied = tmp_path / "old-run"
    shutil.copytree(trained_run("rnn"), copied)
    (copied / "spaces.json").unlink()
    old, new = load_policy(copied), load_policy(trained_run("rnn"))
    assert old.spaces == new.spaces
    old.reset()
    new.reset()
    for obs in ([0.0, 1.0], [0.0, 0.0], [0.0, 0.0], [1.0, 0.0]):
        assert old.act(np.array(obs, dtype=np.float32), 0.0) == new.act(np.array(obs, dtype=np.float32), 0.0)


def test_an_epoch_loads_its_own_weights(trained_run):
    run_dir = trained_run("ff")
    first = load_policy(run_dir, epoch=0)
    assert first.agent is not load_policy(run_dir).agent
    with pytest.raises(PolicyLoadError, match=r"epoch 7 .* saved epochs: \[0, 1\]"):
        load_policy(run_dir, epoch=7)


def test_act_before_reset_says_to_reset(trained_run):
    policy = load_policy(trained_run("ff"))
    with pytest.raises(RuntimeError, match=r"call reset\(n_envs\) before act"):
        policy.act(np.zeros(2, dtype=np.float32))


def test_wrong_inputs_are_one_line_errors(trained_run):
    policy = load_policy(trained_run("ff"))
    policy.reset(2)
    with pytest.raises(ValueError, match="returned observation key 'observation' with shape"):
        policy.act(np.zeros(2, dtype=np.float32))
    with pytest.raises(ValueError, match=r"reward has 3 value\(s\); pass one per env \(2\)"):
        policy.act(np.zeros((2, 2), dtype=np.float32), reward=[0.0, 1.0, 2.0])


def one_line(exc_info) -> str:
    message = str(exc_info.value)
    assert "\n" not in message
    return message


def test_not_a_run_folder(tmp_path):
    with pytest.raises(PolicyLoadError) as missing:
        load_policy(tmp_path / "nothing-here")
    assert "no run folder at" in one_line(missing)
    with pytest.raises(PolicyLoadError) as empty:
        load_policy(tmp_path)
    assert "has no config.resolved.json" in one_line(empty)


def test_pickle_files_are_refused_without_being_read(tmp_path):
    pickle_file = tmp_path / "policy.pt"
    pickle_file.write_bytes(b"not even read")
    with pytest.raises(PolicyLoadError) as as_path:
        load_policy(pickle_file)
    assert "pickle file" in one_line(as_path)
    amago_run = tmp_path / "amago-run"
    (amago_run / "ckpts" / "policy_weights").mkdir(parents=True)
    (amago_run / "ckpts" / "policy_weights" / "policy_epoch_3.pt").write_bytes(b"not even read")
    with pytest.raises(PolicyLoadError) as only_pickles:
        load_policy(amago_run)
    assert "holds pickle checkpoints (ckpts/policy_weights/policy_epoch_3.pt)" in one_line(only_pickles)


def test_missing_or_mismatched_weights(trained_run, tmp_path):
    copied = tmp_path / "run"
    shutil.copytree(trained_run("ff"), copied)
    latest = copied / "ckpts" / "latest" / "policy.safetensors"
    shutil.copy(trained_run("rnn") / "ckpts" / "latest" / "policy.safetensors", latest)
    with pytest.raises(PolicyLoadError) as mismatched:
        load_policy(copied)
    assert "does not match this agent" in one_line(mismatched)
    latest.unlink()
    with pytest.raises(PolicyLoadError) as missing:
        load_policy(copied)
    assert "no policy weights at" in one_line(missing)
