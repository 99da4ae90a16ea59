"""Combination lock: the code is seen once, rewards and episode ends, both action formats, configs and seeds."""

from __future__ import annotations

import json
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pydantic import ValidationError
from typer.testing import CliRunner

from amago_core.plugins.strict import describe_validation_error
from amago_envs.suites.combination_lock import (
    OPENED_METRIC,
    STEPS_METRIC,
    CombinationLock,
    decode_action,
    encode_action,
)
from amago_envs.suites.specs import COMBINATION_LOCK, CombinationLockConfig

OPENED = "AMAGO_LOG_METRIC opened"
STEPS = "AMAGO_LOG_METRIC steps"


def lock(seed: int = 0, **options) -> tuple[CombinationLock, np.ndarray, np.ndarray]:
    """A reset lock (3 dials of 4 symbols unless overridden), its first observation and its code."""
    env = CombinationLock(**options)
    obs, info = env.reset(seed=seed)
    assert info == {}
    return env, obs, env.code.copy()


def wrong(code: np.ndarray, symbols: int = 4) -> np.ndarray:
    """Every dial one position off the code."""
    return (code + 1) % symbols


def test_the_code_is_shown_only_at_the_first_step() -> None:
    env, obs, code = lock(dials=3, symbols=4)
    assert env.observation_space == gymnasium.spaces.Box(0.0, 1.0, (15,), np.float32)
    assert obs.dtype == np.float32
    expected = np.zeros(15, np.float32)
    expected[[code[0], 4 + code[1], 8 + code[2]]] = 1.0  # one one-hot of 4 per dial, dial 0 first
    np.testing.assert_array_equal(obs, expected)
    attempt = wrong(code)
    attempt[1] = code[1]
    for _ in range(3):
        obs, *_ = env.step(attempt)
        np.testing.assert_array_equal(obs[:12], 0.0)  # the code is hidden from the second step on
        np.testing.assert_array_equal(obs[12:], [0.0, 1.0, 0.0])  # which dials the last attempt got right


def test_per_dial_rewards_then_opening_pays_for_the_rest_of_the_horizon() -> None:
    env, _, code = lock(horizon=10)
    attempts = [wrong(code), np.array([code[0], *wrong(code)[1:]]), np.array([*code[:2], wrong(code)[2]])]
    for attempt, paid in zip(attempts, [0.0, 1 / 3, 2 / 3], strict=True):
        _, reward, terminated, truncated, info = env.step(attempt)
        assert reward == pytest.approx(paid)
        assert (terminated, truncated, info) == (False, False, {})
    obs, reward, terminated, truncated, info = env.step(code)
    assert reward == 10 - 4 + 1  # step 4 opens: 1 for itself and 1 for each of the 6 steps left
    assert (terminated, truncated) == (True, False)
    assert info == {OPENED: 1.0, STEPS: 4.0}
    np.testing.assert_array_equal(obs[12:], 1.0)
    with pytest.raises(RuntimeError, match=r"call reset\(\)"):
        env.step(code)


def test_opening_at_once_is_the_best_return() -> None:
    # Partial credit for the whole horizon must not beat opening: all-but-one dial right pays 2/3 x 10 < 10.
    env, _, code = lock(horizon=10)
    _, reward, terminated, _, _ = env.step(code)
    assert (reward, terminated) == (10.0, True)
    env, _, code = lock(horizon=10)
    almost = np.array([*code[:2], wrong(code)[2]])
    total = sum(env.step(almost)[1] for _ in range(10))
    assert total == pytest.approx(20 / 3)


def test_sparse_rewards_pay_only_the_opening() -> None:
    env, _, code = lock(reward="sparse", horizon=5)
    _, reward, *_ = env.step(np.array([*code[:2], wrong(code)[2]]))
    assert reward == 0.0
    _, reward, terminated, _, _ = env.step(code)
    assert (reward, terminated) == (4.0, True)


def test_the_horizon_truncates_a_lock_left_closed() -> None:
    env, _, code = lock(horizon=3)
    for _ in range(2):
        assert env.step(wrong(code))[2:] == (False, False, {})
    _, reward, terminated, truncated, info = env.step(wrong(code))
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info == {OPENED_METRIC: 0.0, STEPS_METRIC: 3.0}
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(code)
    # Opening on the last step ends the episode as opened (terminated), not as truncated.
    env, _, code = lock(horizon=2)
    env.step(wrong(code))
    _, reward, terminated, truncated, info = env.step(code)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info == {OPENED: 1.0, STEPS: 2.0}


def test_flat_indices_decode_row_major_with_dial_zero_most_significant() -> None:
    assert decode_action(6, 3, 4).tolist() == [0, 1, 2]
    assert decode_action(63, 3, 4).tolist() == [3, 3, 3]
    assert decode_action(5, 2, 3).tolist() == [1, 2]
    for index in range(4**3):
        assert encode_action(decode_action(index, 3, 4), 4) == index


def test_both_action_formats_set_the_same_dials() -> None:
    flat, flat_obs, code = lock(seed=3, action_format="discrete", horizon=100)
    factored, factored_obs, same_code = lock(seed=3, action_format="multidiscrete", horizon=100)
    assert flat.action_space == gymnasium.spaces.Discrete(64)
    assert factored.action_space == gymnasium.spaces.MultiDiscrete([4, 4, 4])
    np.testing.assert_array_equal(code, same_code)
    np.testing.assert_array_equal(flat_obs, factored_obs)
    for index in range(64):
        if index == encode_action(code, 4):
            continue  # the opening index ends the episode; checked below
        one = flat.step(np.int64(index))
        other = factored.step(decode_action(index, 3, 4))
        np.testing.assert_array_equal(one[0], other[0])
        assert one[1:] == other[1:]
    assert (
        flat.step(encode_action(code, 4))[1:4] == factored.step(code)[1:4] == (100 - 64 + 1, True, False)
    )  # the 64th attempt


@pytest.mark.parametrize(
    ("options", "action"),
    [
        ({}, np.array([0, 1])),  # one dial short
        ({}, np.array([0, 1, 4])),  # past the last symbol
        ({}, np.array([0.0, 1.0, 2.0])),  # not integers
        ({}, 5),  # a flat index given to the factored lock
        ({"action_format": "discrete"}, 64),
        ({"action_format": "discrete"}, np.array([0, 1, 2])),
    ],
)
def test_malformed_actions_are_refused_in_one_line(options, action) -> None:
    env, _, _ = lock(**options)
    with pytest.raises(ValueError, match="combination-lock actions") as caught:
        env.step(action)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"dials": 1}, "dials: Input should be greater than or equal to 2"),
        ({"symbols": 1}, "symbols: "),
        ({"horizon": 0}, "horizon: "),
        ({"reward": "dense"}, "reward: Input should be 'per_dial' or 'sparse'"),
        ({"action_format": "box"}, "action_format: "),
        (
            {"action_format": "discrete", "dials": 7},
            "has 16384 actions, over the 4096 a flat policy head can take",
        ),
        ({"task": "easy"}, "has no tasks, got 'easy'; use the env id 'combination-lock'"),
        ({"dails": 3}, "did you mean 'dials'"),
    ],
)
def test_config_errors_are_one_line(options, fragment) -> None:
    with pytest.raises(ValidationError) as caught:
        CombinationLockConfig(**options)
    [line] = describe_validation_error(caught.value, source="env")
    assert fragment in line
    assert "\n" not in line


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"dials": 1}, "need dials >= 2"),
        ({"horizon": 0}, "horizon >= 1"),
        ({"reward": "dense"}, "reward must be one of"),
        ({"action_format": "box"}, "action_format must be one of"),
        ({"action_format": "discrete", "dials": 7}, "use action_format='multidiscrete'"),
    ],
)
def test_env_option_errors_are_one_line(options, fragment) -> None:
    with pytest.raises(ValueError, match=fragment) as caught:
        CombinationLock(**options)
    assert "\n" not in str(caught.value)


def test_config_defaults_and_episode_steps() -> None:
    config = CombinationLockConfig()
    assert (config.dials, config.symbols, config.horizon) == (3, 4, 10)
    assert (config.reward, config.action_format) == ("per_dial", "multidiscrete")
    assert config.episode_steps() == 10
    assert CombinationLockConfig(horizon=25).episode_steps() == 25
    assert CombinationLockConfig.whole_episode_memory


def test_check_component_passes() -> None:
    from amago_core.testing import check_component

    report = check_component("envs", "combination_lock")
    assert "config pins kind and documents every field" in report.passed


@pytest.mark.parametrize("action_format", ["multidiscrete", "discrete"])
def test_gymnasium_check_env(action_format) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(CombinationLock(action_format=action_format))
    assert [str(w.message) for w in caught if "not having a spec" not in str(w.message)] == []


def rollout(env: CombinationLock, seed: int, steps: int = 100) -> list:
    """Everything ``steps`` seeded random attempts return, resetting when an episode ends."""
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    record: list = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        record += [obs, reward, terminated, truncated, sorted(info.items())]
        if terminated or truncated:
            obs, _ = env.reset()
            record.append(obs)
    return record


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("action_format", ["multidiscrete", "discrete"])
def test_seeds_reproduce_and_differ(action_format) -> None:
    first = rollout(CombinationLock(symbols=2, action_format=action_format), seed=5)
    assert same(first, rollout(CombinationLock(symbols=2, action_format=action_format), seed=5))
    assert not same(first, rollout(CombinationLock(symbols=2, action_format=action_format), seed=6))
    codes = {tuple(lock(seed=seed)[2]) for seed in range(30)}
    assert len(codes) > 10  # 64 codes: the seed picks among them


@pytest.mark.parametrize(
    ("options", "env_name"),
    [
        ({}, "CombinationLock-3x4-H10"),
        ({"action_format": "discrete", "dials": 2, "horizon": 6}, "CombinationLock-2x4-H6-Flat"),
        ({"reward": "sparse", "symbols": 5}, "CombinationLock-3x5-H10-Sparse"),
    ],
)
def test_suite_builds_the_configured_lock(options, env_name) -> None:
    suite = COMBINATION_LOCK.build(options)
    assert suite.env_name == env_name
    env = suite.make_gym_env()
    assert isinstance(env, CombinationLock)
    assert (env.dials, env.symbols, env.horizon) == (
        suite.config.dials,
        suite.config.symbols,
        suite.config.horizon,
    )
    assert (env.reward, env.action_format) == (suite.config.reward, suite.config.action_format)


def test_the_flat_lock_runs_inside_amago_env() -> None:
    env = COMBINATION_LOCK.build({"action_format": "discrete"}).make_env("val")
    first, _ = env.reset(seed=0)
    assert first.obs["observation"].shape == (1, 15)
    _, reward, terminated, truncated, _ = env.step(np.array([0]))
    assert reward.shape == terminated.shape == truncated.shape == (1,)


def test_env_id_resolves_through_the_registry() -> None:
    from amago_core.plugins.registry import registries

    registry = registries()
    assert registry.resolve_env_id("combination-lock") == ("combination_lock", None)
    assert registry.env_suites.build({"kind": "combination_lock"}).env_name == "CombinationLock-3x4-H10"


@pytest.mark.parametrize("flags", [[], ["-o", "env.action_format=discrete"]])
def test_dry_run_prints_the_preset(flags) -> None:
    from amago_core.cli.app import app

    result = CliRunner().invoke(app, ["run", "--env", "combination-lock", *flags, "--dry-run"])
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout[result.stdout.index("{") :])
    assert config["env"]["action_format"] == ("discrete" if flags else "multidiscrete")
    assert config["run"]["max_seq_len"] == config["replay"]["traj_save_len"] == 10
    assert config["traj_encoder"]["kind"] == "rnn"
    assert config["exploration"]["kind"] == "egreedy"  # the same in both formats
    assert config["rollout"]["env_mode"] == "sync"
