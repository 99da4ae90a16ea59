"""``HalfCheetahVel``: gymnasium's HalfCheetah-v5 rewarded for matching a target velocity it never observes."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv

from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX

_LAST = 50  # window of the end-of-episode velocity metrics


class HalfCheetahVel(gymnasium.Env[np.ndarray, np.ndarray]):
    """HalfCheetah with reward ``-w|v - v_target| - ctrl_cost_weight * |a|²``, ``v_target ~ U[lo, hi]`` per reset.

    The target is hidden: the agent infers it from rewards within the episode. Observations are the cheetah's
    17 floats (float32). The episode is truncated after ``max_episode_steps``; on that step ``info`` carries
    ``Mean Velocity``, ``Max Velocity``, ``Avg. Last 50 Timestep Velocity`` and ``Target Velocity Error at Final
    50 Timesteps`` for logging.

    Args:
        task_min_velocity: lowest target.
        task_max_velocity: highest target.
        ctrl_cost_weight: action-cost weight.
        max_episode_steps: truncation step.
        velocity_reward_weight: weight of the velocity term ``-|v - v_target|`` (AMAGO's argument).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        task_min_velocity: float = 0.0,
        task_max_velocity: float = 3.0,
        ctrl_cost_weight: float = 0.05,
        max_episode_steps: int = 1000,
        velocity_reward_weight: float = 1.0,
    ):
        if task_min_velocity > task_max_velocity or max_episode_steps < 1:
            msg = (
                "need task_min_velocity <= task_max_velocity and max_episode_steps >= 1; got "
                f"{task_min_velocity}, {task_max_velocity}, {max_episode_steps}."
            )
            raise ValueError(msg)
        self.task_min_velocity = task_min_velocity
        self.task_max_velocity = task_max_velocity
        self.ctrl_cost_weight = ctrl_cost_weight
        self.velocity_reward_weight = velocity_reward_weight
        self.max_episode_steps = max_episode_steps
        self.cheetah = HalfCheetahEnv()
        self.observation_space = gymnasium.spaces.Box(
            -np.inf, np.inf, shape=self.cheetah.observation_space.shape, dtype=np.float32
        )
        self.action_space = self.cheetah.action_space
        self.target_velocity = 0.0
        self.velocities: list[float] = []
        self._over = True

    def sample_target_velocity(self) -> float:
        """Draws this episode's target (override for another task distribution)."""
        return float(self.np_random.uniform(self.task_min_velocity, self.task_max_velocity))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draws a target velocity and resets the cheetah."""
        super().reset(seed=seed)
        self.target_velocity = self.sample_target_velocity()
        # The cheetah's initial noise follows this env's generator, so seeding this env seeds both.
        obs, _ = self.cheetah.reset(seed=int(self.np_random.integers(2**31)))
        self.velocities = []
        self._over = False
        return obs.astype(np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Steps the cheetah and replaces its reward with the velocity-matching one."""
        if self._over:
            msg = "HalfCheetahVel episode is over (or never started); call reset() before step()."
            raise RuntimeError(msg)
        action = np.asarray(action, dtype=np.float32)
        obs, _, terminated, _, info = self.cheetah.step(action)
        velocity = float(info["x_velocity"])
        self.velocities.append(velocity)
        reward = -self.velocity_reward_weight * abs(
            velocity - self.target_velocity
        ) - self.ctrl_cost_weight * float(np.square(action).sum())
        truncated = len(self.velocities) >= self.max_episode_steps
        out = {"x_velocity": velocity, "target_velocity": self.target_velocity}
        if terminated or truncated:
            self._over = True
            last = np.asarray(self.velocities[-_LAST:])
            out.update(
                {
                    f"{AMAGO_ENV_LOG_PREFIX} Mean Velocity": float(np.mean(self.velocities)),
                    f"{AMAGO_ENV_LOG_PREFIX} Max Velocity": float(np.max(self.velocities)),
                    f"{AMAGO_ENV_LOG_PREFIX} Avg. Last 50 Timestep Velocity": float(last.mean()),
                    f"{AMAGO_ENV_LOG_PREFIX} Target Velocity Error at Final 50 Timesteps": float(
                        np.abs(last - self.target_velocity).mean()
                    ),
                }
            )
        return obs.astype(np.float32), float(reward), bool(terminated), bool(truncated), out

    def close(self) -> None:
        """Closes the MuJoCo env."""
        self.cheetah.close()
