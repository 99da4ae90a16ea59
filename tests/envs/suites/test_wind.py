"""The ``wind`` suite: dynamics, soft resets, trial ends, task sets, rewards, splits, per-attempt metrics, preset."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pydantic import ValidationError

from amago_core.config.sources import load_config
from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX
from amago_core.rollout.sequence import log_metrics_from_info
from amago_envs.suites.wind.env import ACTION_LIMIT, GOAL, Wind, wind_set
from amago_envs.suites.wind.specs import WIND, WindConfig
from amago_envs.suites.wind.suite import WindSuite


def still(_env: Wind) -> np.ndarray:
    return np.zeros(2, dtype=np.float32)


def play_trial(
    env: Wind, policy: Callable[[Wind], np.ndarray] = still
) -> list[tuple[np.ndarray, float, bool, bool, dict]]:
    """Steps ``env`` (already reset) with ``policy(env)`` until the trial ends; every step's output."""
    out = []
    while True:
        step = env.step(policy(env))
        out.append(step)
        if step[2] or step[3]:
            return out


def logged(info: dict) -> dict[str, float]:
    return {
        k.removeprefix(AMAGO_ENV_LOG_PREFIX).strip(): v
        for k, v in info.items()
        if k.startswith(AMAGO_ENV_LOG_PREFIX)
    }


def test_point_moves_by_the_clipped_action_plus_the_wind() -> None:
    wind = np.array([0.02, -0.01])
    env = Wind(winds=[wind], k_episodes=1, max_episode_steps=10)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32
    assert obs.tolist() == [0.0, 0.0, 1.0]
    assert info["task_index"] == 0
    obs, *_ = env.step(np.array([0.05, 0.7], dtype=np.float32))  # y is clipped to 0.1
    np.testing.assert_allclose(obs[:2], [0.05 + 0.02, ACTION_LIMIT - 0.01], rtol=1e-6)
    assert obs[2] == 0.0
    obs, *_ = env.step(np.array([-3.0, -0.04]))  # x is clipped to -0.1
    np.testing.assert_allclose(obs[:2], [0.07 - 0.1 + 0.02, 0.09 - 0.04 - 0.01], rtol=1e-5)
    with pytest.raises(ValueError, match="dx, dy"):
        env.step(np.zeros(3))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_the_farthest_reachable_point_is_inside_the_observation_space(sign: float) -> None:
    env = Wind(winds=[[0.01, -0.02], [sign * 0.08, sign * 0.08]], k_episodes=1, max_episode_steps=50)
    env.reset(seed=0)
    while env.task_index != 1:
        env.reset()
    steps = play_trial(env, lambda _e: np.full(2, sign * ACTION_LIMIT, dtype=np.float32))
    np.testing.assert_allclose(steps[-1][0][:2], [sign * 50 * 0.18] * 2, rtol=1e-5)
    assert all(env.observation_space.contains(s[0]) for s in steps)


def test_step_before_reset_and_after_the_trial_is_refused() -> None:
    env = Wind(winds=wind_set(5, 0.08, 0), k_episodes=2, max_episode_steps=3)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2))
    env.reset(seed=1)
    play_trial(env)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2))


def test_soft_reset_returns_to_the_origin_and_flags_each_attempt_start() -> None:
    env = Wind(winds=[[0.05, 0.05]], k_episodes=3, max_episode_steps=4)
    first, _ = env.reset(seed=0)
    steps = play_trial(env)
    assert len(steps) == 12
    flags = [float(obs[2]) for obs, *_ in steps]
    # 1 on the first observation of attempts 2 and 3 (the reset gave attempt 1's); 0 on the trial's last step.
    assert [first[2], *flags] == [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0]
    for t in (3, 7):
        assert steps[t][0][:2].tolist() == [0.0, 0.0]  # back at the origin, the wind kept
        np.testing.assert_allclose(steps[t + 1][0][:2], [0.05, 0.05])
    np.testing.assert_allclose(steps[-1][0][:2], [0.2, 0.2], rtol=1e-6)  # the final position, not the origin


def test_trial_ends_truncated_after_the_last_attempt_only() -> None:
    env = Wind(winds=[[0.0, 0.0]], k_episodes=2, max_episode_steps=5)
    env.reset(seed=0)
    steps = play_trial(env)
    assert len(steps) == 10
    assert [s[3] for s in steps] == [False] * 9 + [True]
    assert not any(s[2] for s in steps)  # never terminated: the critic bootstraps across the cut


def test_wind_is_fixed_within_a_trial_and_redrawn_at_reset() -> None:
    winds = wind_set(20, 0.08, 3)
    env = Wind(winds=winds, k_episodes=2, max_episode_steps=6)
    env.reset(seed=0)
    drawn = set()
    for _ in range(15):
        obs, _ = env.reset()
        assert env.task_index is not None
        assert env.wind.tolist() == winds[env.task_index].tolist()
        drawn.add(env.task_index)
        previous = obs[:2].astype(np.float64)
        for step_obs, *_ in play_trial(env):
            if step_obs[2] == 1.0:  # soft reset: the next step starts from the origin
                previous = np.zeros(2)
                continue
            np.testing.assert_allclose(step_obs[:2] - previous, winds[env.task_index], atol=1e-6)
            previous = step_obs[:2].astype(np.float64)
    assert len(drawn) > 5


def test_seeded_trials_replay_exactly_and_the_checker_passes() -> None:
    winds = wind_set(10, 0.08, 1337)

    def run(seed: int) -> list[float]:
        env = Wind(winds=winds, k_episodes=2, max_episode_steps=5)
        env.reset(seed=seed)
        env.action_space.seed(seed)
        return [float(x) for s in play_trial(env, lambda e: e.action_space.sample()) for x in s[0]]

    assert run(4) == run(4)
    assert run(4) != run(5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(Wind(winds=winds, k_episodes=2, max_episode_steps=5))
    assert [str(w.message) for w in caught if "not having a spec" not in str(w.message)] == []


def test_task_sets_are_reproducible_private_and_disjoint() -> None:
    a = wind_set(60, 0.08, 1337)
    assert a.shape == (60, 2)
    assert np.abs(a).max() <= 0.08
    assert np.array_equal(a, wind_set(60, 0.08, 1337))
    np.random.seed(0)
    expected = np.random.random()
    np.random.seed(0)
    wind_set(60, 0.08, 1337)
    assert np.random.random() == expected  # the global RNG is not touched
    held_out = wind_set(60, 0.08, 9999)
    assert not {tuple(w) for w in a} & {tuple(w) for w in held_out}
    with pytest.raises(ValueError, match="wind_max"):
        wind_set(5, 0.0, 1)


def test_train_and_val_use_the_train_winds_test_the_held_out_ones() -> None:
    suite = WIND.build({"n_tasks": 8, "wind_seed": 1, "held_out_seed": 2})
    assert isinstance(suite, WindSuite)
    train = suite.winds("train")
    assert np.array_equal(train, wind_set(8, 0.08, 1))
    assert np.array_equal(suite.winds("val"), train)
    assert np.array_equal(suite.winds("test"), wind_set(8, 0.08, 2))
    assert np.array_equal(suite.make_gym_env("test").winds, suite.winds("test"))
    assert np.array_equal(suite.make_gym_env("val").winds, train)
    env = suite.make_unseen_env()
    env.reset(seed=0)
    assert np.array_equal(env.env.winds, suite.winds("test"))

    splits = suite.task_splits()
    assert splits.can_tell
    assert splits.tasks("unseen").held_out
    assert not splits.tasks("train").held_out
    assert splits.tasks("val") == splits.tasks("train")
    assert "held_out_seed=2" in splits.tasks("test").description
    with pytest.raises(ValidationError, match="held_out_seed"):
        WindConfig(wind_seed=5, held_out_seed=5)


@pytest.mark.parametrize("dense", [False, True])
def test_rewards_and_success_are_counted_by_the_goal_disk(dense: bool) -> None:
    env = Wind(winds=[[0.0, 0.0]], k_episodes=2, max_episode_steps=12, dense_reward=dense)
    env.reset(seed=0)

    def to_goal_then_away(e: Wind) -> np.ndarray:
        if len(e.attempt_returns) == 0:  # attempt 1: 10 steps up reach (0, 1), then stay
            return np.array([0.0, ACTION_LIMIT if e.attempt_steps < 10 else 0.0])
        return np.array([ACTION_LIMIT, 0.0])  # attempt 2: away from the goal

    steps = play_trial(env, to_goal_then_away)
    distances = [s[4]["distance"] for s in steps]
    rewards = [s[1] for s in steps]
    expected = [np.exp(-d) if dense else float(d <= 0.03) for d in distances]
    np.testing.assert_allclose(rewards, expected)
    assert [s[4]["success"] for s in steps[:12]] == [False] * 9 + [True] * 3
    assert env.attempt_successes == [True, False]
    np.testing.assert_allclose(env.attempt_returns, [sum(expected[:12]), sum(expected[12:])])
    if not dense:
        assert env.attempt_returns == [3.0, 0.0]
    else:
        assert env.attempt_returns[1] > 0.0  # dense reward pays off the goal too, success does not
    assert np.allclose(GOAL, (0.0, 1.0))


def test_per_attempt_metrics_arrive_once_the_trial_is_over() -> None:
    env = Wind(winds=[[0.0, 0.0]], k_episodes=3, max_episode_steps=10)
    env.reset(seed=0)

    def solve_only_attempt_2(e: Wind) -> np.ndarray:
        return np.array([0.0, ACTION_LIMIT if len(e.attempt_returns) == 1 else 0.0])

    steps = play_trial(env, solve_only_attempt_2)
    assert all(logged(s[4]) == {} for s in steps[:-1])
    metrics = logged(steps[-1][4])
    assert metrics == {
        "Trial 0 Return": 0.0,
        "Trial 0 Success": 0.0,
        "Trial 1 Return": 1.0,
        "Trial 1 Success": 1.0,
        "Trial 2 Return": 0.0,
        "Trial 2 Success": 0.0,
        "Total Successes": 1.0,
    }


@pytest.mark.parametrize(("split", "k"), [("train", 2), ("val", 5), ("test", 5)])
def test_attempts_per_trial_follow_the_split(split: str, k: int) -> None:
    suite = WIND.build({"max_episode_steps": 4, "k_train": 2, "k_eval": 5})
    env = suite.make_env(split)
    assert env.env_name == "Wind"
    env.reset(seed=0)
    for t in range(1, 4 * k + 1):
        _, _, terminated, truncated, info = env.step(np.zeros((1, 2), dtype=np.float32))
        assert bool(terminated[0]) is False
        assert bool(truncated[0]) is (t == 4 * k)
    metrics = log_metrics_from_info(info)
    assert {f"Trial {i} Success" for i in range(k)} <= set(metrics)
    assert f"Trial {k} Success" not in metrics


def test_config_defaults_lengths_and_checks() -> None:
    cfg = WindConfig()
    assert WindConfig.fields_missing_docs() == []
    assert WindConfig.kind_name() == "wind"
    assert (cfg.n_tasks, cfg.wind_max, cfg.wind_seed, cfg.held_out_seed) == (60, 0.08, 1337, 9999)
    assert (cfg.goal_radius, cfg.dense_reward, cfg.max_episode_steps) == (0.03, False, 75)
    assert (cfg.attempts("train"), cfg.attempts("val"), cfg.attempts("test")) == (4, 10, 10)
    assert cfg.episode_steps() == 300
    assert WindConfig(k_train=2, max_episode_steps=10).episode_steps() == 20
    assert not WindConfig.whole_episode_memory  # the memory is meant to be shorter than the trial
    with pytest.raises(ValueError, match="unknown split"):
        cfg.attempts("tst")
    with pytest.raises(ValueError, match="unknown split"):
        WindSuite(cfg).make_env("tst")
    with pytest.raises(ValidationError, match="has no tasks"):
        WindConfig(task="easy")
    for bad in ({"wind_max": 0.0}, {"k_eval": 0}, {"goal_radius": 0.0}, {"n_tasks": 0}):
        with pytest.raises(ValidationError):
            WindConfig(**bad)
    assert WIND.build({"dense_reward": True}).env_name == "Wind-dense"


def test_preset_is_amagos_wind_example() -> None:
    config = load_config(base=WIND.preset_for(None))
    assert config.run.max_seq_len == 128 < WindConfig().episode_steps()  # the KV cache must roll over
    assert config.replay.traj_save_len == 6 * 128
    assert config.replay.padded_sampling == "center"
    assert config.schedule.val_timesteps_per_epoch == 10 * 75 + 1  # one whole 10-attempt val trial
    assert config.optim.learning_rate == 3e-4
    assert config.optim.grad_clip == 2.0
    traj, agent, exploration = (config.component(s) for s in ("traj_encoder", "agent", "exploration"))
    assert (traj.kind, traj.pos_emb) == ("transformer", "rope")
    assert (agent.reward_multiplier, agent.gamma, agent.tau) == (10.0, 0.99, 0.005)
    assert (exploration.kind, exploration.steps_anneal) == ("egreedy", 500_000)


def test_specs_module_imports_no_heavy_library() -> None:
    code = (
        "import sys, amago_envs.suites.wind.specs\n"
        "print([m for m in ('torch', 'gymnasium', 'numpy') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
