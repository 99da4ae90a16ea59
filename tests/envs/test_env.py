"""AMAGOEnv and SequenceEnv: time alignment, action conversion, bad env output, names and metrics."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from amago_core.data.writer import TrajectoryWriter
from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX, AMAGOEnv, EnvContractError
from amago_core.rollout.sequence import SequenceEnv


class CountEnv(gym.Env):
    """obs = [episode number, step]; reward = 100 * episode + step; ends after ``ep_len`` steps."""

    def __init__(
        self, ep_len: int = 4, action_space: gym.Space | None = None, truncate: bool = False
    ) -> None:
        self.ep_len = ep_len
        self.truncate = truncate
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = action_space or gym.spaces.Discrete(3)
        self.ep = -1
        self.t = 0
        self.received: list = []

    def _obs(self) -> np.ndarray:
        return np.array([self.ep, self.t], dtype=np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.ep += 1
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.received.append(action)
        self.t += 1
        end = self.t >= self.ep_len
        info = {f"{AMAGO_ENV_LOG_PREFIX} Final Step": self.t} if end else {}
        return (
            self._obs(),
            float(100 * self.ep + self.t),
            end and not self.truncate,
            end and self.truncate,
            info,
        )


def test_alignment_across_an_episode_and_a_reset():
    env = SequenceEnv(AMAGOEnv(CountEnv(ep_len=3), env_name="count"))
    ts = env.reset()
    actions = [2, 0, 1, 1, 2, 0, 2]
    for step, a in enumerate(actions):
        ep_before, t_before = ts.obs["observation"][0]
        res = env.step(np.array([a]))
        ts = res.timestep
        ep, t = ts.obs["observation"][0]
        if t_before + 1 == 3:  # the episode ended on this step: the input is the next episode's start
            assert res.terminated[0]
            assert (ep, t) == (ep_before + 1, 0)
            assert ts.time_idx[0] == 0
            assert ts.reward[0] == 0
            assert not ts.prev_action.any()
            assert not ts.terminal[0]
            assert res.reward[0] == 100 * ep_before + 3  # the step's own reward is still reported
        else:
            assert (ep, t) == (ep_before, t_before + 1), step
            assert ts.time_idx[0] == t
            assert ts.reward[0] == 100 * ep + t
            np.testing.assert_array_equal(ts.prev_action[0], np.eye(3, dtype=np.uint8)[a])
        rl2 = ts.as_input().rl2[0]
        assert rl2[0] == ts.reward[0]  # reward first, then the action
        np.testing.assert_array_equal(rl2[1:], ts.prev_action[0])
    assert env.return_history["count"] == [1 + 2 + 3, 101 + 102 + 103]


def test_terminal_flag_is_terminated_only():
    amago = AMAGOEnv(CountEnv(ep_len=1, truncate=True), env_name="c")
    amago.reset()
    ts, _, terminated, truncated, _ = amago.step(0)
    assert truncated[0]
    assert not terminated[0]
    assert not ts.terminal[0]
    amago = AMAGOEnv(CountEnv(ep_len=1), env_name="c")
    amago.reset()
    ts, *_ = amago.step(0)
    assert ts.terminal[0]


def test_non_dict_obs_gets_the_observation_key_and_a_batch_dim():
    env = AMAGOEnv(gym.make("CartPole-v1"), env_name="CartPole/v1")
    assert list(env.observation_space.spaces) == ["observation"]
    ts, _ = env.reset(seed=0)
    assert ts.obs["observation"].shape == (1, 4)
    assert env.env_name == "CartPole_v1"


def test_dict_obs_are_kept():
    class DictEnv(CountEnv):
        def __init__(self):
            super().__init__()
            self.observation_space = gym.spaces.Dict(
                {
                    "pos": gym.spaces.Box(0, 9, (2,), np.float32),
                    "img": gym.spaces.Box(0, 255, (3, 3), np.uint8),
                }
            )

        def _obs(self):
            return {"pos": np.zeros(2, np.float32), "img": np.full((3, 3), 7, np.uint8)}

    ts, _ = AMAGOEnv(DictEnv(), env_name="d").reset()
    assert ts.obs["img"].dtype == np.uint8
    assert ts.obs["img"].shape == (1, 3, 3)
    assert ts.obs["pos"].shape == (1, 2)


def test_box_actions_are_rescaled_and_stored_normalised():
    inner = CountEnv(
        action_space=gym.spaces.Box(np.array([0.0, -10.0], np.float32), np.array([2.0, 10.0], np.float32))
    )
    env = AMAGOEnv(inner, env_name="box")
    assert env.action_space.low.tolist() == [-1, -1]
    env.reset()
    ts, *_ = env.step(np.array([[-1.0, 0.5]]))
    np.testing.assert_allclose(inner.received[-1], [0.0, 5.0])
    np.testing.assert_allclose(ts.prev_action, [[-1.0, 0.5]])
    assert ts.prev_action.dtype == np.float32
    with pytest.raises(EnvContractError, match=r"\[-1, 1\]"):
        env.step(np.array([1.5, 0.0]))


def test_multibinary_actions():
    inner = CountEnv(action_space=gym.spaces.MultiBinary(3))
    env = AMAGOEnv(inner, env_name="mb")
    ts, _ = env.reset()
    assert ts.prev_action.shape == (1, 3)
    assert ts.prev_action.dtype == np.uint8
    ts, *_ = env.step(np.array([1, 0, 1]))
    np.testing.assert_array_equal(ts.prev_action, [[1, 0, 1]])
    np.testing.assert_array_equal(inner.received[-1], [1, 0, 1])


def test_discrete_action_forms_and_start_offset():
    inner = CountEnv(action_space=gym.spaces.Discrete(3, start=5))
    env = AMAGOEnv(inner, env_name="d")
    env.reset()
    for form in (2, np.array(2), np.array([2]), np.array([[2]], dtype=np.uint8)):
        ts, *_ = env.step(form)
        assert inner.received[-1] == 7
        np.testing.assert_array_equal(ts.prev_action, [[0, 0, 1]])
    with pytest.raises(EnvContractError, match="out of range"):
        env.step(3)


def test_unsupported_action_space_is_refused():
    with pytest.raises(EnvContractError, match="Discrete, MultiDiscrete, Box and MultiBinary"):
        AMAGOEnv(CountEnv(action_space=gym.spaces.Tuple((gym.spaces.Discrete(2),))), env_name="x")
    with pytest.raises(EnvContractError, match="MultiDiscrete actions must be 1-D"):
        AMAGOEnv(CountEnv(action_space=gym.spaces.MultiDiscrete([[2, 3], [2, 2]])), env_name="x")


def test_multidiscrete_actions_are_stored_as_one_one_hot_per_dimension():
    inner = CountEnv(action_space=gym.spaces.MultiDiscrete([2, 3, 4], start=[0, 1, -2]))
    env = AMAGOEnv(inner, env_name="md")
    assert env.is_multidiscrete
    assert env.action_dim == 9
    assert env.action_space == gym.spaces.MultiDiscrete([2, 3, 4])  # the policy's choices start at 0
    env.reset()
    timestep = env.step(np.array([1, 2, 0]))[0]
    assert timestep.prev_action.tolist() == [[0, 1, 0, 0, 1, 1, 0, 0, 0]]
    assert inner.received[-1].tolist() == [1, 3, -2]  # the env's own offsets
    with pytest.raises(EnvContractError, match="out of range"):
        env.step(np.array([2, 0, 0]))


def test_wrong_obs_shape_names_env_and_key():
    class BadShape(CountEnv):
        def step(self, action):
            _, *rest = super().step(action)
            return np.zeros(3, np.float32), *rest

    env = AMAGOEnv(BadShape(), env_name="shapey")
    env.reset()
    with pytest.raises(EnvContractError, match=r"'shapey'.*'observation'.*\(3,\).*\(2,\)"):
        env.step(0)


class NanObsEnv(CountEnv):
    """Its observation turns NaN at ``bad_step`` (0: the reset observation)."""

    def __init__(self, bad_step: int) -> None:
        super().__init__(ep_len=10)
        self.bad_step = bad_step

    def _obs(self) -> np.ndarray:
        obs = super()._obs()
        return np.array([np.nan, obs[1]], np.float32) if self.t == self.bad_step else obs


def _reset_then_step_twice(envs, action) -> None:
    envs.reset()
    envs.step(action)
    envs.step(action)


@pytest.mark.parametrize("bad_step", [0, 2])
def test_a_non_finite_observation_is_refused_where_it_enters(bad_step):
    from amago_core.rollout import NonFiniteEnvDataError, make_pool
    from amago_core.rollout.creator import EnvCreator

    env = AMAGOEnv(NanObsEnv(bad_step), env_name="nanobs")
    expected = rf"env 'nanobs' returned a non-finite observation 'observation' \(nan\) at step {bad_step} of an episode;"
    with pytest.raises(NonFiniteEnvDataError, match=expected):
        _reset_then_step_twice(env, 0)
    # The stacked sync pool builds its timesteps without AMAGOEnv.step; it refuses the same data, naming the row.
    creators = [
        EnvCreator(lambda: AMAGOEnv(CountEnv(ep_len=10), env_name="fine")),
        EnvCreator(lambda: AMAGOEnv(NanObsEnv(bad_step), env_name="nanobs")),
    ]
    pool = make_pool("sync", creators)
    try:
        with pytest.raises(
            NonFiniteEnvDataError, match=rf"'nanobs' .* at step {bad_step} of an episode \(row 1\)"
        ):
            _reset_then_step_twice(pool, np.zeros(2, np.int64))
    finally:
        pool.close()


def test_wrong_obs_dtype_names_env_and_key():
    class BadDtype(CountEnv):
        def __init__(self):
            super().__init__()
            self.observation_space = gym.spaces.Dict({"img": gym.spaces.Box(0, 255, (2,), np.uint8)})

        def _obs(self):
            return {"img": np.array([0.5, 0.2])}

    with pytest.raises(EnvContractError, match=r"'dtypey'.*'img'.*float64.*uint8"):
        AMAGOEnv(BadDtype(), env_name="dtypey").reset()


def test_float64_obs_for_a_float32_space_is_cast():
    class F64(CountEnv):
        def _obs(self):
            return np.array([self.ep, self.t], dtype=np.float64)

    ts, _ = AMAGOEnv(F64(), env_name="f").reset()
    assert ts.obs["observation"].dtype == np.float32


def test_missing_env_name_is_a_clear_error():
    env = AMAGOEnv(CountEnv())
    with pytest.raises(ValueError, match="env_name"):
        _ = env.env_name


class MultiTaskEnv(CountEnv):
    """Renames itself at every reset (like a multi-task env sampling a new task)."""

    @property
    def env_name(self) -> str:
        return f"task{self.ep % 2}"


def test_env_name_follows_the_task_and_metrics_are_logged_per_name():
    env = SequenceEnv(AMAGOEnv(MultiTaskEnv(ep_len=2)))
    env.reset()
    for _ in range(6):
        env.step(np.array([0]))
    assert env.return_history == {"task0": [1 + 2, 201 + 202], "task1": [101 + 102]}
    assert env.metric_history["task0"]["Final Step"] == [2, 2]
    assert env.frames_by_env_name == {"task0": 4, "task1": 2}


class MyMetaRLEnv(gym.Wrapper):
    """The seeds' pattern: the env resets itself k times and reports done only after the k-th episode."""

    def __init__(self, env: gym.Env, k: int) -> None:
        super().__init__(env)
        self.k = k

    def reset(self, seed=None, options=None):
        obs, info = self.env.reset(seed=seed)
        self.current_episode = 0
        self.episode_return = 0.0
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_return += reward
        if terminated or truncated:
            obs, info = self.env.reset()
            info[f"{AMAGO_ENV_LOG_PREFIX} Ep {self.current_episode} Return"] = self.episode_return
            self.episode_return = 0.0
            self.current_episode += 1
        done = self.current_episode >= self.k
        return obs, reward, done, done, info


def test_meta_rl_env_with_its_own_k_shot_resets(tmp_path):
    inner = CountEnv(ep_len=2)
    env = SequenceEnv(
        AMAGOEnv(MyMetaRLEnv(inner, k=3), env_name="meta"), TrajectoryWriter(1, tmp_path, save_as="npz")
    )
    ts = env.reset()
    times = [int(ts.time_idx[0])]
    for _ in range(6):
        ts = env.step(np.array([1])).timestep
        times.append(int(ts.time_idx[0]))
    # One rollout of 3 inner episodes: the time index runs on through inner resets, then restarts.
    assert times == [0, 1, 2, 3, 4, 5, 0]
    assert env.metric_history["meta"]["Ep 0 Return"] == [1 + 2]
    assert env.metric_history["meta"]["Ep 2 Return"] == [201 + 202]
    (path,) = env.save_finished_trajs()
    from amago_core.data.files import load_traj

    traj = load_traj(path)
    assert len(traj) == 6
    assert traj.dones[-1, 0]  # terminated=True at the rollout's end
    assert not traj.dones[:-1].any()


class VecCountEnv:
    """An already-vectorised env: N rows with different episode lengths, auto-resetting finished rows."""

    def __init__(self, lengths: list[int]) -> None:
        self.lengths = np.array(lengths)
        self.n = len(lengths)
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.single_action_space = gym.spaces.Discrete(2)
        self.observation_space = self.single_observation_space
        self.action_space = self.single_action_space
        self.t = np.zeros(self.n, dtype=np.int64)
        self.ep = np.zeros(self.n, dtype=np.int64)
        self.unwrapped = self

    def _obs(self):
        return np.stack([self.ep, self.t], axis=1).astype(np.float32)

    def reset(self, seed=None, options=None):
        self.t[:] = 0
        return self._obs(), {}

    def step(self, action):
        assert action.shape == (self.n,)
        self.t += 1
        done = self.t >= self.lengths
        reward = self.t.astype(np.float32)
        self.ep[done] += 1
        self.t[done] = 0  # auto-reset: the returned obs is the new episode's first
        return self._obs(), reward, done, np.zeros(self.n, bool), {}

    def close(self):
        pass


def test_already_vectorised_env_resets_step_count_of_done_rows():
    env = AMAGOEnv(VecCountEnv([2, 3]), env_name="vec", batched_envs=2)
    env.reset()
    env.step(np.array([0, 1]))
    ts, _, term, _, _ = env.step(np.array([1, 1]))
    assert term.tolist() == [True, False]
    assert ts.time_idx.tolist() == [2, 2]  # the raw step still describes the finished episode
    assert env.step_count.tolist() == [0, 2]


def test_gymnasium_same_step_vector_env_keeps_final_obs_for_the_file(tmp_path):
    def make():
        return CountEnv(ep_len=3)

    vec = gym.vector.SyncVectorEnv([make, make], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    env = SequenceEnv(AMAGOEnv(vec, env_name="vec", batched_envs=2), TrajectoryWriter(2, tmp_path))
    env.reset(seed=0)
    for _ in range(3):
        res = env.step(np.array([1, 2]))
    # The policy sees the new episode's start ...
    assert res.timestep.time_idx.tolist() == [0, 0]
    np.testing.assert_array_equal(res.timestep.obs["observation"][:, 1], [0, 0])
    assert not res.timestep.prev_action.any()
    # ... while the files end with each episode's final observation.
    from amago_core.data.files import load_traj

    for path in env.save_finished_trajs():
        f = load_traj(path)
        assert f.obs["observation"][:, 1].tolist() == [0, 1, 2, 3]
        assert f.dones[:, 0].tolist() == [False, False, True]
    assert env.metric_history["vec"]["Final Step"] == [3, 3]


def test_next_step_autoreset_vector_env_is_refused():
    vec = gym.vector.SyncVectorEnv([lambda: CountEnv(), lambda: CountEnv()])
    with pytest.raises(EnvContractError, match="SAME_STEP"):
        AMAGOEnv(vec, env_name="vec", batched_envs=2)


@pytest.mark.parametrize(
    ("action", "valid"),
    [(0, True), (3, True), (np.int64(2), True), (np.array(1), True), (4, False), (-1, False), (1.0, False),
     (np.array([1]), False), (np.array(1.0), False), ("1", False)],
)  # fmt: skip
def test_the_numpy_suites_check_actions_like_gymnasium_does(action, valid):
    from amago_envs.suites.actions import is_discrete_action

    assert is_discrete_action(action, 4) is valid
    assert gym.spaces.Discrete(4).contains(action) is valid
