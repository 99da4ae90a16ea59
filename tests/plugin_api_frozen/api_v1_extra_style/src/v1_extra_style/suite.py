"""The env suites (numpy and gymnasium only)."""

from __future__ import annotations

import gymnasium
import numpy as np

from amago_envs.suites.suite import BuiltinSuite
from v1_extra_style.specs import BanditConfig, CoinConfig, DialConfig


class PickOneEnv(gymnasium.Env):
    """One step: pick the arm that pays; observation is a constant."""

    def __init__(self, arms: int, paying: int):
        self.observation_space = gymnasium.spaces.Box(0.0, 1.0, (1,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(arms)
        self.paying = paying

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.ones(1, dtype=np.float32), {}

    def step(self, action):
        return np.ones(1, dtype=np.float32), float(int(action) == self.paying), True, False, {}


class BanditSuite(BuiltinSuite):
    config_type = BanditConfig

    @property
    def default_task(self):
        return "easy"

    @property
    def env_name(self):
        return f"Bandit-{self.task}-{self.config.arms}arms"

    def make_gym_env(self):
        return PickOneEnv(arms=self.config.arms, paying=0 if self.task == "easy" else self.config.arms - 1)


class CoinSuite(BuiltinSuite):
    config_type = CoinConfig

    @property
    def default_task(self):
        return None

    @property
    def env_name(self):
        return "Coin"

    def make_gym_env(self):
        return PickOneEnv(arms=2, paying=0)


class DialSuite(BuiltinSuite):
    config_type = DialConfig

    @property
    def default_task(self):
        return "small"

    @property
    def env_name(self):
        return f"Dial-{self.task}"

    def make_gym_env(self):
        return PickOneEnv(arms=self.config.positions, paying=1)
