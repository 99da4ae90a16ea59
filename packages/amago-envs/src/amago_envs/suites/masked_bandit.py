"""Masked bandit: a bandit whose best arm is illegal on odd steps, the task that shows what an action mask is for.

Arms: 0 pays 1 but is illegal on odd steps (choosing it there pays -1 and counts as illegal), 1 pays 0.5 and is
always legal, 2 pays 0. The observation is a constant, so without the mask a memoryless policy cannot tell odd
steps from even ones; with it, the best play (arm 0 on even steps, arm 1 on odd ones) is readable at every step.
Episodes last ``horizon`` steps: the best return is ``horizon / 2 * 1.5``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX, AMAGOEnv
from amago_envs.suites.specs import MaskedBanditConfig
from amago_envs.suites.suite import BuiltinSuite, check_split

ILLEGAL_METRIC = f"{AMAGO_ENV_LOG_PREFIX} illegal actions"
"""The env metric logged at each episode's end: how many illegal arms were pulled."""


class MaskedBandit(gym.Env):
    """See the module docstring.

    Args:
        horizon: steps per episode.
        mask_in: ``"info"`` (``info["legal"]``), ``"obs"`` (a Dict observation with a ``"legal"`` key) or
            ``"withheld"`` (no mask given: the unmasked baseline).
    """

    def __init__(self, horizon: int = 8, mask_in: str = "info") -> None:
        self.horizon = horizon
        self.mask_in = mask_in
        self.action_space = gym.spaces.Discrete(3)
        constant = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        if mask_in == "obs":
            self.observation_space = gym.spaces.Dict(
                {"observation": constant, "legal": gym.spaces.MultiBinary(3)}
            )
        else:
            self.observation_space = constant
        self.t = 0
        self.illegal = 0

    def legal(self) -> np.ndarray:
        return np.array([self.t % 2 == 0, True, True])

    def _out(self) -> tuple[Any, dict[str, Any]]:
        constant = np.zeros(1, np.float32)
        info: dict[str, Any] = {}
        if self.mask_in == "info":
            info["legal"] = self.legal()
        if self.mask_in == "obs":
            return {"observation": constant, "legal": self.legal().astype(np.int8)}, info
        return constant, info

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t, self.illegal = 0, 0
        return self._out()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        arm = int(action)
        if not self.legal()[arm]:
            reward = -1.0
            self.illegal += 1
        else:
            reward = (1.0, 0.5, 0.0)[arm]
        self.t += 1
        obs, info = self._out()
        done = self.t >= self.horizon
        if done:
            info[ILLEGAL_METRIC] = self.illegal
        return obs, reward, False, done, info


class MaskedBanditSuite(BuiltinSuite):
    """The ``masked_bandit`` env suite (env id ``masked-bandit``): the env names its mask to ``AMAGOEnv``."""

    config_type = MaskedBanditConfig
    config: MaskedBanditConfig

    @property
    def env_name(self) -> str:
        """``MaskedBandit-H{horizon}`` (``-NoMask`` when the mask is withheld)."""
        suffix = "-NoMask" if self.config.mask_from == "withheld" else ""
        return f"MaskedBandit-H{self.config.horizon}{suffix}"

    def make_gym_env(self) -> MaskedBandit:
        """A fresh bandit with this suite's horizon and mask channel."""
        return MaskedBandit(horizon=self.config.horizon, mask_in=self.config.mask_from)

    def make_env(self, split: str = "train") -> AMAGOEnv:
        """The bandit in ``AMAGOEnv``, reading the mask from ``info["legal"]`` or ``obs["legal"]``."""
        check_split(split)
        where = self.config.mask_from
        if where == "withheld":
            return AMAGOEnv(self.make_gym_env(), env_name=self.env_name)
        return AMAGOEnv(
            self.make_gym_env(), env_name=self.env_name, action_mask_key="legal", action_mask_from=where
        )
