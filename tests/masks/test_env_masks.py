"""Action masks at the env: AMAGOEnv reads them from an observation or info key, checks them, stores them under
``action_mask``; exploration's random actions and the spaces record respect them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from amago_core.rollout.action_mask import ACTION_MASK_KEY, ActionMaskError, sample_allowed
from amago_core.rollout.env import AMAGOEnv, EnvContractError
from amago_core.rollout.sequence import SequenceEnv
from amago_core.rollout.spaces import PolicySpaces
from amago_envs.exploration.specs import EGreedyConfig
from amago_envs.exploration.wrappers import EpsilonGreedy
from amago_envs.suites.masked_bandit import MaskedBandit


@pytest.mark.parametrize("where", ["info", "obs"])
def test_the_mask_is_read_checked_and_stored_under_action_mask(where):
    env = AMAGOEnv(
        MaskedBandit(mask_in=where), env_name="bandit", action_mask_key="legal", action_mask_from=where
    )
    assert set(env.observation_space.spaces) == {
        "observation",
        ACTION_MASK_KEY,
    }  # "legal" left the encoder's obs
    assert env.observation_space[ACTION_MASK_KEY].dtype == bool
    timestep, _ = env.reset()
    assert timestep.obs[ACTION_MASK_KEY].tolist() == [[True, True, True]]
    assert timestep.obs[ACTION_MASK_KEY].dtype == bool
    timestep = env.step(1)[0]
    assert timestep.obs[ACTION_MASK_KEY].tolist() == [[False, True, True]]  # step 1 is odd: arm 0 illegal


def test_an_env_without_a_mask_is_unchanged():
    env = AMAGOEnv(MaskedBandit(mask_in="info"), env_name="bandit")
    assert ACTION_MASK_KEY not in env.reset()[0].obs
    assert env.action_mask is None


class _BadMask(MaskedBandit):
    def __init__(self, mask: object) -> None:
        super().__init__(mask_in="info")
        self.mask = mask

    def _out(self):
        obs, info = super()._out()
        info["legal"] = self.mask
        return obs, info


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (
            np.ones(4, bool),
            r"env 'bandit' gave an action mask of shape \(4,\) at info\['legal'\]; expected \(3,\)",
        ),
        (np.zeros(3, bool), r"allows no action"),
        (np.array([0.5, 1.0, 1.0]), r"values other than 0/1"),
        (None, r"gave no action mask at info\['legal'\]"),
    ],
)
def test_a_bad_mask_is_one_line_naming_the_env_and_key(mask, message):
    env = AMAGOEnv(_BadMask(mask), env_name="bandit", action_mask_key="legal", action_mask_from="info")
    with pytest.raises(ActionMaskError, match=message):
        env.reset()


def test_masks_of_continuous_actions_and_a_missing_obs_key_are_refused():
    class BoxBandit(MaskedBandit):
        def __init__(self):
            super().__init__()
            self.action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

    with pytest.raises(ActionMaskError, match="masks apply to Discrete and MultiDiscrete"):
        AMAGOEnv(BoxBandit(), env_name="box", action_mask_key="legal", action_mask_from="info")
    with pytest.raises(ActionMaskError, match="has no observation key 'legal'"):
        AMAGOEnv(MaskedBandit(mask_in="info"), env_name="bandit", action_mask_key="legal")


def test_an_observation_key_named_action_mask_must_be_declared():
    class Named(MaskedBandit):
        def __init__(self):
            super().__init__(mask_in="obs")
            self.observation_space = gym.spaces.Dict(
                {
                    "observation": self.observation_space["observation"],
                    ACTION_MASK_KEY: gym.spaces.MultiBinary(3),
                }
            )

    with pytest.raises(ActionMaskError, match="name for action masks"):
        AMAGOEnv(Named(), env_name="named")


def test_exploration_never_takes_a_masked_random_action():
    inner = MaskedBandit(horizon=1000, mask_in="info")
    env = AMAGOEnv(inner, env_name="bandit", action_mask_key="legal", action_mask_from="info")
    explore = EpsilonGreedy(env, EGreedyConfig(eps_start=1.0, eps_end=1.0, randomize_eps=False), seed=0)
    seq = SequenceEnv(explore)
    seq.reset()
    for _ in range(400):
        seq.step(np.array([2]))  # the policy's choice is always replaced (eps = 1)
    assert inner.illegal == 0
    assert inner.t == 400


def test_sample_allowed_is_uniform_over_allowed_actions():
    mask = np.array([[False, True, True, False]] * 4000)
    draws = sample_allowed(np.random.default_rng(0), mask)
    counts = np.bincount(draws, minlength=4)
    assert counts[0] == counts[3] == 0
    assert abs(counts[1] - 2000) < 150


def test_the_spaces_record_keeps_where_the_mask_comes_from():
    env = AMAGOEnv(
        MaskedBandit(mask_in="info"), env_name="bandit", action_mask_key="legal", action_mask_from="info"
    )
    spaces = PolicySpaces.of_env(env)
    back = PolicySpaces.from_json(spaces.to_json())
    assert back.action_mask == spaces.action_mask
    assert (back.action_mask.key, back.action_mask.where) == ("legal", "info")
    assert back.obs_space[ACTION_MASK_KEY].dtype == bool
    record = spaces.to_json()
    del record["env"]["action_mask"]  # a record written before masks existed
    assert PolicySpaces.from_json(record).action_mask is None


def test_a_multidiscrete_mask_needs_a_choice_in_every_dimension():
    class Lock(MaskedBandit):
        def __init__(self, mask):
            super().__init__(mask_in="info")
            self.action_space = gym.spaces.MultiDiscrete([2, 3])
            self.mask = mask

        def _out(self):
            obs, info = super()._out()
            info["legal"] = self.mask
            return obs, info

    ok = AMAGOEnv(
        Lock(np.array([1, 0, 0, 0, 1], bool)),
        env_name="lock",
        action_mask_key="legal",
        action_mask_from="info",
    )
    assert ok.reset()[0].obs[ACTION_MASK_KEY].shape == (1, 5)
    empty_dim = AMAGOEnv(
        Lock(np.array([1, 1, 0, 0, 0], bool)),
        env_name="lock",
        action_mask_key="legal",
        action_mask_from="info",
    )
    with pytest.raises(ActionMaskError, match=r"allows no action in action dimension 1 \(row\(s\) \[0\]\)"):
        empty_dim.reset()


def test_the_sync_pool_refuses_actors_that_disagree_on_having_a_mask():
    from amago_core.rollout.pools.stacked import StackedEnv

    masked = AMAGOEnv(MaskedBandit(), env_name="bandit", action_mask_key="legal", action_mask_from="info")
    plain = AMAGOEnv(MaskedBandit(), env_name="bandit")
    for envs in ([plain, masked], [masked, plain]):
        with pytest.raises(EnvContractError, match="different spaces"):
            StackedEnv(envs)
