"""Exploration wrappers: schedules, per-reset multipliers, and that the noisy action is what gets stored."""

from __future__ import annotations

import math
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from pydantic import ValidationError

from amago_core.rollout.env import AMAGOEnv
from amago_core.rollout.sequence import SequenceEnv
from amago_envs.exploration.specs import BILEVEL, EGREEDY, TMAZE, BilevelConfig, EGreedyConfig
from amago_envs.exploration.wrappers import BilevelEpsilonGreedy, EpsilonGreedy


class RecordEnv(gym.Env):
    """Records every action it receives; ends after ``ep_len`` steps."""

    def __init__(self, action_space: gym.Space, ep_len: int = 1000) -> None:
        self.observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
        self.action_space = action_space
        self.ep_len = ep_len
        self.received: list = []
        self.t = 0

    def reset(self, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.received.append(np.array(action, copy=True))
        self.t += 1
        return np.zeros(1, np.float32), 0.0, self.t >= self.ep_len, False, {}


def discrete_env(ep_len: int = 1000) -> tuple[RecordEnv, AMAGOEnv]:
    inner = RecordEnv(gym.spaces.Discrete(4), ep_len)
    return inner, AMAGOEnv(inner, env_name="rec")


def box_env(ep_len: int = 1000) -> tuple[RecordEnv, AMAGOEnv]:
    inner = RecordEnv(gym.spaces.Box(np.float32(-2), np.float32(2), (2,), np.float32), ep_len)
    return inner, AMAGOEnv(inner, env_name="rec")


def test_egreedy_schedule_values():
    _, env = discrete_env()
    wrapper = EpsilonGreedy(
        env, EGreedyConfig(eps_start=1.0, eps_end=0.1, steps_anneal=10, randomize_eps=False), seed=0
    )
    wrapper.reset()
    seen = []
    for _ in range(14):
        wrapper.step(np.array([0]))
        seen.append(float(wrapper.last_eps[0]))
    # eps is computed before the step counter moves: step g uses max(1 - g * 0.09, 0.1).
    expected = [max(1.0 - g * 0.09, 0.1) for g in range(14)]
    np.testing.assert_allclose(seen, expected)


def test_bilevel_schedule_decays_within_the_episode_and_across_actor_steps():
    _, env = discrete_env(ep_len=5)
    config = BilevelConfig(
        rollout_horizon=5,
        eps_start_start=1.0,
        eps_start_end=0.2,
        eps_end_start=0.5,
        eps_end_end=0.1,
        steps_anneal=20,
        randomize_eps=False,
    )
    wrapper = BilevelEpsilonGreedy(env, config, seed=0)
    seq = SequenceEnv(wrapper)  # resets the env in the same step its episode ends
    seq.reset()
    seen = []
    for _ in range(10):
        seq.step(np.array([0]))
        seen.append(float(wrapper.last_eps[0]))
    expected = []
    for g in range(10):
        start = max(1.0 - g * 0.8 / 20, 0.2)
        end = max(0.5 - g * 0.4 / 20, 0.1)
        local = g % 5
        expected.append(start - (start - end) * local / 5)
    np.testing.assert_allclose(seen, expected)


def test_quiet_steps_use_their_own_epsilon_each_episode():
    _, env = discrete_env(ep_len=6)
    built = EGREEDY.build(
        {"eps_start": 0.9, "eps_end": 0.9, "quiet_steps": [1, 4], "quiet_eps": 0.02, "randomize_eps": False},
        env=env,
    )
    seq = SequenceEnv(built)  # resets in the step an episode ends, so step_count restarts at 0
    seq.reset()
    seen = []
    for _ in range(12):
        seq.step(np.array([0]))
        seen.append(float(built.last_eps[0]))
    # Episode steps 0..5 twice: 1, 2 and 3 are quiet; the rest follow the (flat) schedule.
    np.testing.assert_allclose(seen, [0.9, 0.02, 0.02, 0.02, 0.9, 0.9] * 2)
    with pytest.raises(ValidationError, match="first < last"):
        EGreedyConfig(quiet_steps=(5, 5))


def test_tmaze_exploration_is_quiet_at_half_over_h_inside_the_corridor_only():
    _, env = discrete_env(ep_len=9)  # a 8-cell corridor's passive episode: corridor + 1 steps
    built = TMAZE.build(
        {"corridor_length": 8, "eps_start": 0.6, "eps_end": 0.6, "randomize_eps": False}, env=env
    )
    seq = SequenceEnv(built)
    seq.reset()
    seen = []
    for _ in range(9):
        seq.step(np.array([0]))
        seen.append(float(built.last_eps[0]))
    # AMAGO's rule: 0 < t < H - 3 at 0.5 / H, the annealed schedule elsewhere (start and near the junction).
    np.testing.assert_allclose(seen, [0.6] + [0.5 / 8] * 4 + [0.6] * 4)


def test_tmaze_exploration_anneals_outside_the_corridor_and_has_no_corridor_when_short():
    _, env = discrete_env(ep_len=5)
    built = TMAZE.build({"corridor_length": 4, "steps_anneal": 10, "randomize_eps": False}, env=env)
    assert built.schedule.quiet_steps is None  # [1, 1): no corridor step to keep quiet
    seq = SequenceEnv(built)
    seq.reset()
    for _ in range(20):
        seq.step(np.array([0]))
    assert float(built.last_eps[0]) == pytest.approx(0.01)  # AMAGO's T-Maze schedule ends at 0.01


def test_random_multiplier_is_redrawn_on_reset_and_on_episode_end():
    _, env = discrete_env(ep_len=3)
    wrapper = EpsilonGreedy(env, EGreedyConfig(eps_start=1.0, eps_end=1.0, randomize_eps=True), seed=1)
    wrapper.reset()
    m0 = wrapper.multiplier.copy()
    assert 0.0 <= m0[0] < 1.0
    wrapper.step(np.array([0]))
    np.testing.assert_allclose(wrapper.last_eps, m0)  # eps = m * schedule (schedule is 1 here)
    wrapper.step(np.array([0]))
    assert wrapper.multiplier[0] == m0[0]  # unchanged mid-episode
    wrapper.step(np.array([0]))  # episode ends
    m1 = wrapper.multiplier.copy()
    assert m1[0] != m0[0]
    wrapper.reset()
    assert wrapper.multiplier[0] != m1[0]
    off = EpsilonGreedy(discrete_env()[1], EGreedyConfig(randomize_eps=False))
    off.reset()
    assert off.multiplier.tolist() == [1.0]


def test_discrete_stored_action_is_the_executed_action():
    inner, env = discrete_env()
    seq = SequenceEnv(
        EpsilonGreedy(env, EGreedyConfig(eps_start=0.5, eps_end=0.5, randomize_eps=False), seed=3)
    )
    seq.reset()
    changed = 0
    for _ in range(200):
        ts = seq.step(np.array([0])).timestep
        executed = int(inner.received[-1])
        assert int(ts.prev_action[0].argmax()) == executed
        changed += executed != 0
    # eps = 0.5 with a uniform draw over 4 actions replaces the greedy one 0.5 * 3/4 of the time.
    assert 50 < changed < 100


def test_continuous_noise_scale_clipping_and_stored_action():
    inner, env = box_env()
    seq = SequenceEnv(
        EpsilonGreedy(env, EGreedyConfig(eps_start=0.3, eps_end=0.3, randomize_eps=False), seed=4)
    )
    seq.reset()
    policy = np.array([[0.0, 0.95]], np.float32)
    stored = []
    for _ in range(400):
        ts = seq.step(policy).timestep
        stored.append(ts.prev_action[0].copy())
        np.testing.assert_allclose(inner.received[-1], ts.prev_action[0] * 2.0, rtol=1e-5, atol=1e-6)
    stored = np.array(stored)
    assert np.abs(stored).max() <= 1.0
    assert abs(stored[:, 0].std() - 0.3) < 0.05  # Gaussian noise with std eps
    assert (stored[:, 1] == 1.0).any()  # clipped, not rejected
    with pytest.raises(ValueError, match=r"\[-1, 1\] before exploration noise"):
        seq.step(np.array([[0.0, 1.5]], np.float32))


def test_multibinary_is_refused():
    env = AMAGOEnv(RecordEnv(gym.spaces.MultiBinary(2)), env_name="mb")
    with pytest.raises(ValueError, match="MultiBinary"):
        EpsilonGreedy(env)


def test_batched_env_has_one_multiplier_per_row():
    class Vec:
        def __init__(self):
            self.single_observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
            self.single_action_space = gym.spaces.Discrete(3)
            self.observation_space, self.action_space = (
                self.single_observation_space,
                self.single_action_space,
            )
            self.unwrapped = self

        def reset(self, seed=None, options=None):
            return np.zeros((4, 1), np.float32), {}

        def step(self, a):
            done = np.array([True, False, False, False])
            return np.zeros((4, 1), np.float32), np.zeros(4), done, np.zeros(4, bool), {}

    wrapper = EpsilonGreedy(AMAGOEnv(Vec(), env_name="v", batched_envs=4), seed=0)
    wrapper.reset()
    before = wrapper.multiplier.copy()
    assert len(set(before.tolist())) == 4
    wrapper.step(np.zeros(4, np.int64))
    assert wrapper.multiplier[0] != before[0]
    np.testing.assert_array_equal(wrapper.multiplier[1:], before[1:])


def test_specs_build_with_defaults_and_context():
    _, env = discrete_env()
    built = EGREEDY.build(None, env=env, seed=0)
    assert isinstance(built, EpsilonGreedy)
    assert built.schedule.eps_start_start == 1.0
    assert built.rollout_horizon == math.inf
    bilevel = BILEVEL.build({"eps_end_end": 0.02}, env=env, rollout_horizon=50)
    assert isinstance(bilevel, BilevelEpsilonGreedy)
    assert (bilevel.rollout_horizon, bilevel.schedule.eps_end_end) == (50, 0.02)
    with pytest.raises(ValueError, match="rollout_horizon"):
        BILEVEL.build(None, env=env)


def test_wrappers_take_their_config_and_default_to_it():
    _, env = discrete_env()
    # AMAGO's exploration_wrapper_type=EpsilonGreedy: the class is called with the env and seed only.
    default = EpsilonGreedy(env=env, seed=0)
    assert default.schedule == EGreedyConfig().as_bilevel()
    assert default.rollout_horizon == math.inf
    tuned = EpsilonGreedy(env, EGreedyConfig(eps_start=0.4, eps_end=0.2), start_step=5)
    assert (tuned.schedule.eps_start_start, tuned.schedule.eps_end_end, tuned.global_step) == (0.4, 0.2, 5)
    bilevel = BilevelEpsilonGreedy(env, BilevelConfig(rollout_horizon=30))
    assert (bilevel.rollout_horizon, bilevel.schedule.eps_end_start) == (30, 0.8)
    with pytest.raises(ValueError, match=r"set exploration\.rollout_horizon"):
        BilevelEpsilonGreedy(env)


def test_configs_are_documented_and_validated():
    for cfg in (EGreedyConfig, BilevelConfig):
        assert cfg.fields_missing_docs() == []
    with pytest.raises(ValidationError, match="eps_start"):
        EGreedyConfig(eps_strat=0.5)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        EGreedyConfig(eps_end=1.5)


def test_specs_module_is_torch_free():
    code = "import sys, amago_envs.exploration.specs as s; s.EGREEDY.config(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
