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

    The target is hidden: the agent infers it from rewards. A reset starts a trial of ``k_episodes`` attempts of
    ``max_episode_steps`` steps at one target: after each attempt but the last the cheetah is reset and the target
    kept (a soft reset), so a memory policy can use what earlier attempts taught it. Observations are the
    cheetah's 17 floats (float32), plus, with ``soft_reset_flag``, an 18th that is 1 on the first observation of
    every attempt. The trial is truncated after its last attempt; on that step ``info`` carries ``Mean Velocity``
    and ``Max Velocity`` (over the trial), ``Avg. Last 50 Timestep Velocity`` and ``Target Velocity Error at Final
    50 Timesteps`` for logging, and with more than one attempt ``Trial {i} Return`` and ``Trial {i} Target
    Velocity Error at Final 50 Timesteps`` for each attempt ``i`` (0-based). With ``k_episodes=1`` (the default)
    this is the single-episode task of AMAGO's example 12, draw for draw.

    Args:
        task_min_velocity: lowest target.
        task_max_velocity: highest target.
        ctrl_cost_weight: action-cost weight.
        max_episode_steps: steps of one attempt.
        velocity_reward_weight: weight of the velocity term ``-|v - v_target|`` (AMAGO's argument).
        k_episodes: attempts per trial (one target).
        soft_reset_flag: append the attempt-start flag to the observation; None does so when ``k_episodes > 1``.
            A suite whose splits play different numbers of attempts sets it for all of them alike, so that every
            split has one observation space.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        task_min_velocity: float = 0.0,
        task_max_velocity: float = 3.0,
        ctrl_cost_weight: float = 0.05,
        max_episode_steps: int = 1000,
        velocity_reward_weight: float = 1.0,
        k_episodes: int = 1,
        soft_reset_flag: bool | None = None,
    ):
        if task_min_velocity > task_max_velocity or max_episode_steps < 1 or k_episodes < 1:
            msg = (
                "need task_min_velocity <= task_max_velocity, max_episode_steps >= 1 and k_episodes >= 1; got "
                f"{task_min_velocity}, {task_max_velocity}, {max_episode_steps}, {k_episodes}."
            )
            raise ValueError(msg)
        self.task_min_velocity = task_min_velocity
        self.task_max_velocity = task_max_velocity
        self.ctrl_cost_weight = ctrl_cost_weight
        self.velocity_reward_weight = velocity_reward_weight
        self.max_episode_steps = max_episode_steps
        self.k_episodes = k_episodes
        self.soft_reset_flag = k_episodes > 1 if soft_reset_flag is None else soft_reset_flag
        self.cheetah = HalfCheetahEnv()
        cheetah_dim = int(np.prod(self.cheetah.observation_space.shape or ()))
        self.observation_space = gymnasium.spaces.Box(
            -np.inf, np.inf, shape=(cheetah_dim + int(self.soft_reset_flag),), dtype=np.float32
        )
        self.action_space = self.cheetah.action_space
        self.target_velocity = 0.0
        self.velocities: list[float] = []
        self.attempt_returns: list[float] = []
        self.attempt_errors: list[float] = []
        self._over = True

    def sample_target_velocity(self) -> float:
        """Draws this episode's target (override for another task distribution)."""
        return float(self.np_random.uniform(self.task_min_velocity, self.task_max_velocity))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draws a target velocity and resets the cheetah for the trial's first attempt."""
        super().reset(seed=seed)
        self.target_velocity = self.sample_target_velocity()
        # The cheetah's initial noise follows this env's generator, so seeding this env seeds both; later
        # attempts of the trial continue the cheetah's own (so seeded) generator.
        obs, _ = self.cheetah.reset(seed=int(self.np_random.integers(2**31)))
        self.velocities = []
        self.attempt_returns = []
        self.attempt_errors = []
        self._start_attempt()
        self._over = False
        return self._observe(obs, soft_reset=True), {}

    def _start_attempt(self) -> None:
        self._attempt_start = len(self.velocities)
        self._attempt_return = 0.0

    def _observe(self, obs: np.ndarray, soft_reset: bool) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float32)
        if not self.soft_reset_flag:
            return obs
        return np.concatenate([obs, np.array([soft_reset], dtype=np.float32)])

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Steps the cheetah, replaces its reward with the velocity-matching one, soft-resets between attempts."""
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
        self._attempt_return += reward
        out = {"x_velocity": velocity, "target_velocity": self.target_velocity}
        attempt = self.velocities[self._attempt_start :]
        if not (terminated or len(attempt) >= self.max_episode_steps):
            return self._observe(obs, soft_reset=False), float(reward), False, False, out
        self.attempt_returns.append(self._attempt_return)
        self.attempt_errors.append(float(np.abs(np.asarray(attempt[-_LAST:]) - self.target_velocity).mean()))
        if len(self.attempt_returns) < self.k_episodes and not terminated:
            obs, _ = self.cheetah.reset()
            self._start_attempt()
            return self._observe(obs, soft_reset=True), float(reward), False, False, out
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
        if self.k_episodes > 1:
            # Per attempt, once the trial is over: cut-short trials would weigh the early attempts more.
            for i, (ret, error) in enumerate(zip(self.attempt_returns, self.attempt_errors, strict=True)):
                out[f"{AMAGO_ENV_LOG_PREFIX} Trial {i} Return"] = ret
                out[f"{AMAGO_ENV_LOG_PREFIX} Trial {i} Target Velocity Error at Final 50 Timesteps"] = error
        truncated = len(attempt) >= self.max_episode_steps
        return self._observe(obs, soft_reset=False), float(reward), bool(terminated), truncated, out

    def close(self) -> None:
        """Closes the MuJoCo env."""
        self.cheetah.close()
