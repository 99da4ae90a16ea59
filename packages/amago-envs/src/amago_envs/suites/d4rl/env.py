"""``NormalizedReturnLogger``: logs a dataset's D4RL-normalized return at the end of each online episode."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium

from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX


class NormalizedReturnLogger(gymnasium.Wrapper[Any, Any, Any, Any]):
    """Adds ``D4RL Normalized Return`` (``100 * (R - ref_min) / (ref_max - ref_min)``) on an episode's last step.

    Args:
        env: the dataset's environment.
        ref_min_score: the dataset's reference minimum return.
        ref_max_score: the dataset's reference maximum return (must differ from the minimum).
    """

    def __init__(self, env: gymnasium.Env[Any, Any], ref_min_score: float, ref_max_score: float):
        if ref_max_score == ref_min_score:
            msg = f"reference scores must differ to normalize returns; got min = max = {ref_min_score}."
            raise ValueError(msg)
        super().__init__(env)
        self.ref_min_score = float(ref_min_score)
        self.ref_max_score = float(ref_max_score)
        self.episode_return = 0.0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Starts a new return count."""
        self.episode_return = 0.0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Counts the return and logs it, normalized, when the episode ends."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_return += float(reward)
        if terminated or truncated:
            info = dict(info)
            span = self.ref_max_score - self.ref_min_score
            info[f"{AMAGO_ENV_LOG_PREFIX} D4RL Normalized Return"] = (
                100.0 * (self.episode_return - self.ref_min_score) / span
            )
        return obs, reward, terminated, truncated, info
