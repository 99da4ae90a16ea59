"""``Wind``: a 2-D point pushed by a hidden wind; k attempts per trial to reach a fixed goal.

Every ``reset`` starts a trial: a wind is drawn from the env's task set (fixed for the whole trial) and the point
starts at the origin. Each step moves it by the clipped action plus the wind. After ``max_episode_steps`` steps
the attempt ends and the point is put back at the origin under the same wind (a soft reset, flagged in the
observation); the trial ends, truncated, after the ``k_episodes``-th attempt. The wind is never observed: a
memory policy infers it from where its actions took it, and should do better in later attempts than in the first.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX

GOAL = (0.0, 1.0)
"""Where every trial's goal is (the wind, not the goal, is the task)."""

ACTION_LIMIT = 0.1
"""Actions are clipped to ``[-ACTION_LIMIT, ACTION_LIMIT]`` per axis."""


def wind_set(n_tasks: int, wind_max: float, seed: int) -> np.ndarray:
    """The ``(n_tasks, 2)`` winds of ``seed``, each component uniform in ``[-wind_max, wind_max]``.

    Drawn from a generator of its own, so the set depends on the seed alone and the global RNG is untouched: every
    actor process builds the same set, and two seeds give two different sets.

    Raises:
        ValueError: ``n_tasks < 1`` or ``wind_max <= 0``.
    """
    if n_tasks < 1 or not wind_max > 0:
        msg = f"need n_tasks >= 1 and wind_max > 0; got n_tasks={n_tasks}, wind_max={wind_max}."
        raise ValueError(msg)
    return np.random.default_rng(seed).uniform(-wind_max, wind_max, size=(n_tasks, 2))


class Wind(gymnasium.Env[np.ndarray, np.ndarray]):
    """k attempts per trial at reaching ``(0, 1)`` from the origin under a hidden wind drawn from ``winds``.

    Observation: ``[x, y, flag]`` (float32), the flag 1 on the first observation of every attempt; the box bounds
    ``x`` and ``y`` by the farthest an attempt can reach. Action: ``Box(-0.1, 0.1, (2,))``, clipped. Reward: 1 on
    every step that ends within ``goal_radius`` of the goal, else 0; or, with ``dense_reward``, ``exp(-distance to
    the goal)``. An attempt succeeds if any of its steps ends in the goal disk. The trial ends ``truncated`` (the
    critic bootstraps: nothing terminal happened) after the last attempt; on that step ``info`` carries ``Trial {i}
    Return`` and ``Trial {i} Success`` for each attempt ``i`` (0-based) and ``Total Successes`` for logging. The
    trial's total return is the episode return amago logs anyway (``Average Total Return in {env name}``; a metric
    of that name would overwrite it). Metrics are logged once the trial is over, so trials cut short (the end of an
    evaluation horizon) do not weigh the early attempts more than the late ones.

    Args:
        winds: ``(n, 2)`` array (or nested list) of the task set; each trial draws one row with this env's
            generator.
        k_episodes: attempts per trial.
        max_episode_steps: steps per attempt.
        goal_radius: radius of the goal disk.
        dense_reward: pay ``exp(-distance)`` instead of the sparse reward.

    Attributes:
        wind: the current trial's wind (None before the first reset).
        task_index: its row in ``winds`` (None before the first reset).
        attempt_returns: the finished attempts' returns this trial.
        attempt_successes: whether each finished attempt reached the goal disk.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        winds: np.ndarray | list[list[float]],
        k_episodes: int = 4,
        max_episode_steps: int = 75,
        goal_radius: float = 0.03,
        dense_reward: bool = False,
    ):
        winds = np.array(winds, dtype=np.float64)  # a copy: the task set must not change under the env
        if winds.ndim != 2 or winds.shape[0] < 1 or winds.shape[1] != 2:
            msg = f"winds must be an (n, 2) array with n >= 1; got shape {winds.shape}. Build it with wind_set()."
            raise ValueError(msg)
        if k_episodes < 1 or max_episode_steps < 1 or not goal_radius > 0:
            msg = (
                "need k_episodes >= 1, max_episode_steps >= 1 and goal_radius > 0; got "
                f"{k_episodes}, {max_episode_steps}, {goal_radius}."
            )
            raise ValueError(msg)
        winds.setflags(write=False)
        self.winds = winds
        self.k_episodes = k_episodes
        self.max_episode_steps = max_episode_steps
        self.goal_radius = goal_radius
        self.dense_reward = dense_reward
        self.goal = np.asarray(GOAL, dtype=np.float64)
        self.action_space = gymnasium.spaces.Box(-ACTION_LIMIT, ACTION_LIMIT, shape=(2,), dtype=np.float32)
        # An attempt starts at the origin and moves at most ACTION_LIMIT + |wind| per axis and step; the margin
        # keeps float32 rounding of the farthest reachable position inside the box.
        reach = max_episode_steps * (ACTION_LIMIT + float(np.abs(winds).max())) + 1e-3
        self.observation_space = gymnasium.spaces.Box(
            low=np.array([-reach, -reach, 0.0], dtype=np.float32),
            high=np.array([reach, reach, 1.0], dtype=np.float32),
            dtype=np.float32,
        )
        self.wind: np.ndarray | None = None
        self.task_index: int | None = None
        self.position = np.zeros(2)
        self.attempt_returns: list[float] = []
        self.attempt_successes: list[bool] = []
        self._over = True

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draws the trial's wind and starts its first attempt at the origin."""
        super().reset(seed=seed)
        self.task_index = int(self.np_random.integers(len(self.winds)))
        self.wind = self.winds[self.task_index].copy()
        self.attempt_returns = []
        self.attempt_successes = []
        self._start_attempt()
        self._over = False
        return self._observe(soft_reset=True), {"task_index": self.task_index}

    def _start_attempt(self) -> None:
        self.position = np.zeros(2)
        self.attempt_steps = 0
        self._attempt_return = 0.0
        self._reached = False

    def _observe(self, soft_reset: bool) -> np.ndarray:
        return np.array([self.position[0], self.position[1], float(soft_reset)], dtype=np.float32)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Moves by the clipped action plus the wind, pays the reward, soft-resets at the end of an attempt.

        Raises:
            RuntimeError: the trial is over (or never started).
            ValueError: the action does not hold two numbers.
        """
        if self._over or self.wind is None:
            msg = "Wind trial is over (or never started); call reset() before step()."
            raise RuntimeError(msg)
        move = np.asarray(action, dtype=np.float64).reshape(-1)
        if move.shape != (2,):
            msg = f"Wind actions are (dx, dy); got an action of shape {np.shape(action)}."
            raise ValueError(msg)
        self.position = self.position + np.clip(move, -ACTION_LIMIT, ACTION_LIMIT) + self.wind
        distance = float(np.linalg.norm(self.position - self.goal))
        in_goal = distance <= self.goal_radius
        reward = float(np.exp(-distance)) if self.dense_reward else float(in_goal)
        self._attempt_return += reward
        self._reached |= in_goal
        self.attempt_steps += 1
        info: dict[str, Any] = {"success": in_goal, "distance": distance}
        if self.attempt_steps < self.max_episode_steps:
            return self._observe(soft_reset=False), reward, False, False, info
        self.attempt_returns.append(self._attempt_return)
        self.attempt_successes.append(self._reached)
        if len(self.attempt_returns) < self.k_episodes:
            self._start_attempt()
            return self._observe(soft_reset=True), reward, False, False, info
        self._over = True
        # The last observation keeps the final position: the next one the agent sees is the next trial's reset.
        final = self._observe(soft_reset=False)
        for i, (ret, solved) in enumerate(zip(self.attempt_returns, self.attempt_successes, strict=True)):
            info[f"{AMAGO_ENV_LOG_PREFIX} Trial {i} Return"] = ret
            info[f"{AMAGO_ENV_LOG_PREFIX} Trial {i} Success"] = float(solved)
        info[f"{AMAGO_ENV_LOG_PREFIX} Total Successes"] = float(sum(self.attempt_successes))
        return final, reward, False, True, info
