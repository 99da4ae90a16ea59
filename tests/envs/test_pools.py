"""Vector pools: a done env is reset in the same step, in every mode, with envs ending at different steps."""

from __future__ import annotations

import sys
from functools import partial

import cloudpickle
import gymnasium as gym
import numpy as np
import pytest

from amago_core.data.files import load_traj
from amago_core.rollout.creator import EnvCreator
from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX, AMAGOEnv, EnvContractError
from amago_core.rollout.pools import AsyncPool, EnvWorkerError, make_pool
from amago_envs.exploration.specs import EGREEDY

# Worker processes cannot import this test module by name; ship its classes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

LENGTHS = [2, 3, 5]


class CountEnv(gym.Env):
    """obs = [episode, step]; reward = step; ends after ``ep_len`` steps, logging its length."""

    def __init__(self, ep_len: int, fail_at: int | None = None) -> None:
        self.ep_len = ep_len
        self.fail_at = fail_at
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.ep = -1
        self.t = 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.ep += 1
        self.t = 0
        return np.array([self.ep, 0, -1], np.float32), {}

    def step(self, action):
        self.t += 1
        self.last_action = int(action)
        if self.fail_at is not None and self.t >= self.fail_at:
            msg = "boom from the toy env"
            raise RuntimeError(msg)
        end = self.t >= self.ep_len
        info = {f"{AMAGO_ENV_LOG_PREFIX} Length": self.t} if end else {}
        return np.array([self.ep, self.t, action], np.float32), float(self.t), end, False, info


class VecCountEnv:
    """Already vectorised: one row per length, auto-resetting finished rows."""

    def __init__(self, lengths: list[int]) -> None:
        self.lengths = np.array(lengths)
        self.n = len(lengths)
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
        self.single_action_space = gym.spaces.Discrete(2)
        self.observation_space, self.action_space = self.single_observation_space, self.single_action_space
        self.unwrapped = self
        self.last = np.full(self.n, -1)
        self.t = np.zeros(self.n, np.int64)
        self.ep = np.zeros(self.n, np.int64)

    def _obs(self):
        return np.stack([self.ep, self.t, self.last], axis=1).astype(np.float32)

    def reset(self, seed=None, options=None):
        self.t[:] = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        self.last = np.where(self.t >= self.lengths, -1, action)
        reward = self.t.astype(np.float32)
        done = self.t >= self.lengths
        info = {
            f"{AMAGO_ENV_LOG_PREFIX} Length": self.t.copy(),
            f"_{AMAGO_ENV_LOG_PREFIX} Length": done.copy(),
        }
        self.ep[done] += 1
        self.t[done] = 0
        return self._obs(), reward, done, np.zeros(self.n, bool), info

    def close(self):
        pass


def make_count(ep_len: int, fail_at: int | None = None) -> AMAGOEnv:
    return AMAGOEnv(CountEnv(ep_len, fail_at), env_name=f"count{ep_len}")


def make_vec() -> AMAGOEnv:
    return AMAGOEnv(VecCountEnv(LENGTHS), env_name="vec", batched_envs=len(LENGTHS))


def build(mode: str, save_dir=None, start_method: str = "forkserver"):
    if mode == "already_vectorized":
        return make_pool(mode, [EnvCreator(make_vec, save_dir=save_dir)], num_envs=len(LENGTHS))
    creators = [EnvCreator(partial(make_count, n), save_dir=save_dir) for n in LENGTHS]
    if mode == "sync_per_env":
        return make_pool("sync", creators, stack=False)
    if mode == "async_grouped":
        return make_pool("async", creators, envs_per_worker=2)
    return make_pool(mode, creators, start_method=start_method)


def check_same_step_resets(pool, steps: int = 13) -> None:
    n = len(LENGTHS)
    lengths = np.array(LENGTHS)
    ts = pool.reset(seed=0)
    t, ep = np.zeros(n, int), np.zeros(n, int)
    np.testing.assert_array_equal(ts.time_idx, t)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        actions = rng.integers(0, 2, size=n)
        res = pool.step(actions)
        t += 1
        done = t >= lengths
        np.testing.assert_array_equal(res.terminated, done)
        np.testing.assert_array_equal(res.reward, t)  # the step's own reward, even on a done row
        ep[done] += 1
        t[done] = 0
        nxt = res.timestep
        np.testing.assert_array_equal(nxt.obs["observation"][:, 0], ep)  # next policy input: new episode
        np.testing.assert_array_equal(nxt.obs["observation"][:, 1], t)
        np.testing.assert_array_equal(nxt.time_idx, t)
        np.testing.assert_array_equal(nxt.reward, np.where(done, 0, t))
        expected_prev = np.eye(2, dtype=np.uint8)[actions] * (~done)[:, None]
        np.testing.assert_array_equal(nxt.prev_action, expected_prev)
        assert not nxt.terminal.any()


MODES = ["sync", "sync_per_env", "async", "async_grouped", "already_vectorized"]


@pytest.mark.parametrize("mode", MODES)
def test_same_step_reset_with_different_episode_lengths(mode):
    with build(mode) as pool:
        assert pool.num_envs == 3
        check_same_step_resets(pool)
        stats = pool.stats()
    assert stats["total_frames"] == 13 * 3
    if mode == "already_vectorized":
        assert sorted(stats["return_history"]["vec"]) == sorted([3.0] * 6 + [6.0] * 4 + [15.0] * 2)
        assert sorted(stats["metric_history"]["vec"]["Length"]) == [2] * 6 + [3] * 4 + [5] * 2
    else:
        assert stats["return_history"]["count2"] == [3.0] * 6
        assert stats["return_history"]["count5"] == [15.0] * 2
        assert stats["metric_history"]["count3"]["Length"] == [3] * 4


def test_sync_pool_stacks_compatible_creators_only():
    with build("sync") as pool:
        assert pool.stacked
    with build("sync_per_env") as pool:
        assert not pool.stacked
    mixed = [EnvCreator(partial(make_count, 2)), EnvCreator(partial(make_count, 3), traj_save_len=10)]
    with make_pool("sync", mixed) as pool:
        assert not pool.stacked


@pytest.mark.parametrize("mode", MODES)
def test_exploration_in_a_pool_stores_the_executed_action(mode, tmp_path):
    explore = partial(EGREEDY.build, {"eps_start": 0.7, "eps_end": 0.7})
    if mode == "already_vectorized":
        creators = [EnvCreator(make_vec, exploration=explore, save_dir=tmp_path, seed=0)]
        pool = make_pool(mode, creators)
    else:
        creators = [
            EnvCreator(partial(make_count, n), exploration=explore, save_dir=tmp_path, seed=i)
            for i, n in enumerate(LENGTHS)
        ]
        kwargs = {"sync_per_env": {"stack": False}, "async_grouped": {"envs_per_worker": 2}}.get(mode, {})
        pool = make_pool(mode.split("_")[0], creators, **kwargs)
    changed = 0
    with pool:
        pool.reset()
        for _ in range(40):
            res = pool.step(np.zeros(3, np.int64))  # the policy always says 0
            live = ~res.done
            executed = res.timestep.obs["observation"][live, 2]
            np.testing.assert_array_equal(res.timestep.prev_action[live].argmax(1), executed)
            changed += int((executed == 1).sum())
        paths = pool.save_finished_trajs()
    assert changed > 10
    # Files store the executed actions too: their action column matches the echoed action.
    for p in paths:
        f = load_traj(p)
        if mode != "already_vectorized":
            np.testing.assert_array_equal(f.actions.argmax(1), f.obs["observation"][1:, 2])


def test_async_pool_with_spawn():
    with build("async", start_method="spawn") as pool:
        check_same_step_resets(pool, steps=6)


@pytest.mark.parametrize("mode", MODES)
def test_pools_save_one_file_per_finished_episode(mode, tmp_path):
    with build(mode, save_dir=tmp_path) as pool:
        pool.reset()
        for _ in range(10):
            pool.step(np.zeros(3, dtype=np.int64))
        paths = pool.save_finished_trajs()
    assert len(paths) == 10 // 2 + 10 // 3 + 10 // 5
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)
    for p in paths:
        traj = load_traj(p)
        assert traj.time_idxs[0, 0] == 0
        assert traj.dones[-1, 0]
        assert len(traj) in LENGTHS
        np.testing.assert_array_equal(traj.rews[:, 0], np.arange(1, len(traj) + 1))
        if mode != "already_vectorized":  # such envs hand back only the next episode's first obs
            assert traj.obs["observation"][-1, 1] == len(traj)  # the file ends with the final observation


def test_async_worker_error_names_the_env():
    creators = [EnvCreator(partial(make_count, 3)), EnvCreator(partial(make_count, 3, fail_at=2))]
    pool = AsyncPool(creators)
    try:
        pool.reset()
        pool.step(np.zeros(2, np.int64))
        with pytest.raises(EnvWorkerError, match=r"env 1 .*RuntimeError: boom from the toy env"):
            pool.step(np.zeros(2, np.int64))
    finally:
        pool.close()


def test_pool_rejects_wrong_action_count_and_unknown_mode():
    with build("sync") as pool:
        pool.reset()
        with pytest.raises(ValueError, match="one per row"):
            pool.step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="unknown env_mode"):
        make_pool("threads", [])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="exactly one env creator"):
        make_pool("already_vectorized", [EnvCreator(make_vec), EnvCreator(make_vec)])


class BadShapeEnv(CountEnv):
    """Returns a wrong observation shape from its second step on."""

    def step(self, action):
        obs, *rest = super().step(action)
        return (obs if self.t < 2 else obs[:2]), *rest


@pytest.mark.parametrize("mode", ["sync", "sync_per_env"])
def test_wrong_obs_shape_in_a_pool_names_the_env(mode):
    creators = [
        EnvCreator(partial(make_count, 4)),
        EnvCreator(lambda: AMAGOEnv(BadShapeEnv(4), env_name="broken-env")),
    ]
    with make_pool("sync", creators, stack=mode == "sync") as pool:
        pool.reset()
        pool.step(np.zeros(2, np.int64))
        with pytest.raises(EnvContractError, match=r"'broken-env'.*'observation'.*\(2,\)"):
            pool.step(np.zeros(2, np.int64))


class TwoTaskEnv(gym.Env):
    """A multi-task env that draws its next task at every reset: task0 pays 10 per step, task1 pays 1."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, first: int) -> None:
        self.resets = first
        self.env_name = "unset"
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.resets += 1
        self.env_name = f"task{self.resets % 2}"
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        reward = 10.0 if self.env_name == "task0" else 1.0
        return np.zeros(2, np.float32), reward, self.t >= 3, False, {}


def make_two_task(first: int) -> AMAGOEnv:
    return AMAGOEnv(TwoTaskEnv(first))  # the name comes from the env, and changes at every reset


@pytest.mark.parametrize("mode", ["sync", "sync_per_env", "async"])
@pytest.mark.parametrize("explore", [False, True])
def test_a_finished_episode_is_logged_and_filed_under_the_task_it_ran(mode, explore, tmp_path):
    """An env that picks its next task at reset must not lend the next task's name to the episode that just
    ended: a stacked pool resets finished rows inside its step, before the names are read."""
    exploration = partial(EGREEDY.build, {"eps_start": 0.0, "eps_end": 0.0}) if explore else None
    creators = [
        EnvCreator(partial(make_two_task, first), save_dir=tmp_path, exploration=exploration)
        for first in (0, 1)
    ]
    kwargs = {"stack": False} if mode == "sync_per_env" else {}
    with make_pool(mode.split("_")[0], creators, **kwargs) as pool:
        pool.reset()
        for _ in range(9):
            pool.step(np.zeros(2, dtype=np.int64))
        paths = pool.save_finished_trajs()
        returns = pool.stats()["return_history"]
    assert set(returns) == {"task0", "task1"}
    assert set(returns["task0"]) == {30.0}
    assert set(returns["task1"]) == {3.0}
    assert len(paths) == 6
    for path in paths:
        rewards = set(load_traj(path).rews[:, 0].tolist())
        assert rewards == ({10.0} if path.name.startswith("task0") else {1.0}), path.name
