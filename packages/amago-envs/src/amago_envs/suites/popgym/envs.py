"""POPGym tasks as AMAGO trains on them: flat float observations with a timer, one discrete action.

``make_popgym_task`` wraps one popgym class; ``MultiDomainPOPGym`` (AMAGO-2) draws one of 27 tasks per
episode and pads them into one shared observation and action space.
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium
import numpy as np
import popgym.envs
from popgym.wrappers import DiscreteAction, Flatten

from amago_core.plugins.errors import MissingRequirementError
from amago_envs.suites.popgym.specs import POPGYM_CLASSES


class _OneHotObs(gymnasium.ObservationWrapper):
    """Discrete and MultiDiscrete observations -> a float32 one-hot vector (one block per dimension)."""

    def __init__(self, env: gymnasium.Env[Any, Any]):
        super().__init__(env)
        space = env.observation_space
        if isinstance(space, gymnasium.spaces.Discrete):
            self._sizes = np.array([int(space.n)])
            self._starts = np.array([int(space.start)])
        elif isinstance(space, gymnasium.spaces.MultiDiscrete):
            self._sizes = np.asarray(space.nvec, dtype=np.int64).reshape(-1)
            self._starts = np.asarray(space.start, dtype=np.int64).reshape(-1)
        else:
            msg = f"_OneHotObs takes Discrete or MultiDiscrete observations, got {type(space).__name__}."
            raise TypeError(msg)
        self._offsets = np.concatenate(([0], np.cumsum(self._sizes)[:-1]))
        self._width = int(self._sizes.sum())
        self.observation_space = gymnasium.spaces.Box(0.0, 1.0, shape=(self._width,), dtype=np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        hot = np.zeros((self._width,), dtype=np.float32)
        hot[self._offsets + np.asarray(observation, dtype=np.int64).reshape(-1) - self._starts] = 1.0
        return hot


def flat_popgym_env(class_name: str) -> gymnasium.Env[Any, Any]:
    """One popgym task with a flat float observation and (for discrete games) a single Discrete action.

    Args:
        class_name: a class in ``popgym.envs`` (``RepeatPreviousEasy``).
    """
    cls = getattr(popgym.envs, class_name, None)
    if cls is None:
        # popgym defines its labyrinth games only when mazelib imports.
        msg = f"POPGym's {class_name} needs mazelib, which is not installed; run: pip install mazelib"
        raise MissingRequirementError(msg)
    env: gymnasium.Env[Any, Any] = Flatten(cls())
    if isinstance(env.action_space, gymnasium.spaces.Discrete | gymnasium.spaces.MultiDiscrete):
        env = DiscreteAction(env)  # MultiDiscrete choices (a board cell) become one index
    if isinstance(env.observation_space, gymnasium.spaces.Discrete | gymnasium.spaces.MultiDiscrete):
        env = _OneHotObs(env)
    elif isinstance(env.observation_space, gymnasium.spaces.Box):
        env = gymnasium.wrappers.TransformObservation(
            env,
            lambda obs: np.asarray(obs, dtype=np.float32).reshape(-1),
            gymnasium.spaces.Box(
                -np.inf, np.inf, shape=(int(np.prod(env.observation_space.shape)),), dtype=np.float32
            ),
        )
    return env


def _obs_width(env: gymnasium.Env[Any, Any]) -> int:
    """Size of the flat (1-d) observation of a ``flat_popgym_env``.

    Raises:
        TypeError: the observation space has no shape (a popgym space ``flat_popgym_env`` does not flatten).
    """
    shape = env.observation_space.shape
    if shape is None:
        msg = f"POPGym observations must flatten to a 1-d vector; this task has {env.observation_space}."
        raise TypeError(msg)
    return shape[0]


class POPGymTask(gymnasium.Wrapper):
    """A flat popgym task with AMAGO's conventions: a timer feature and ``truncated_is_done``.

    Args:
        task: a single-game task name (``repeat-previous-easy``).
        truncated_is_done: also report truncation as termination (old popgym semantics).
        timer_scale: the step counter appended to the observation is divided by this.
    """

    def __init__(self, task: str, truncated_is_done: bool = True, timer_scale: float = 1000.0):
        if task not in POPGYM_CLASSES:
            msg = f"{task!r} is not a single POPGym task; use one of {', '.join(POPGYM_CLASSES)}."
            raise ValueError(msg)
        super().__init__(flat_popgym_env(POPGYM_CLASSES[task]))
        self.task = task
        self.truncated_is_done = truncated_is_done
        self.timer_scale = timer_scale
        width = _obs_width(self.env) + 1
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, shape=(width,), dtype=np.float32)
        self._t = 0

    def _with_timer(self, obs: Any) -> np.ndarray:
        return np.append(np.asarray(obs, dtype=np.float32), np.float32(self._t / self.timer_scale))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        """Resets the task and the timer."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._t = 0
        return self._with_timer(obs), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Steps the task; with ``truncated_is_done`` a time limit also terminates."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._t += 1
        if self.truncated_is_done:
            terminated = bool(terminated or truncated)
        return self._with_timer(obs), float(reward), bool(terminated), bool(truncated), info


class MultiDomainPOPGym(gymnasium.Env[np.ndarray, np.int64]):
    """AMAGO-2's multi-domain POPGym: a random task per episode in one shared space.

    Each episode draws one of ``tasks``, plays ``warmup_episodes`` unscored episodes of it (rewards paid as 0
    but shown in the observation), then one scored episode; the env terminates when the scored episode ends.
    Observations are the task's one-hot/float observation zero-padded to the widest task, followed by
    ``[timer / timer_scale, episode / max(warmup_episodes, 1), action_was_valid, last reward]``. Actions are
    ``Discrete(widest action space)``; an index the current task does not have is replaced by a random valid
    one and flagged in the next observation. The step that starts the next attempt pays no reward.

    Args:
        tasks: task names (``repeat-previous-easy``...) of discrete-action POPGym games.
        warmup_episodes: unscored episodes before the scored one.
        timer_scale: the step counter in the observation is divided by this.
    """

    EXTRA_FEATURES = 4
    observation_space: gymnasium.spaces.Box

    def __init__(self, tasks: tuple[str, ...], warmup_episodes: int = 1, timer_scale: float = 1000.0):
        self.tasks = tuple(tasks)
        self.envs = {task: flat_popgym_env(POPGYM_CLASSES[task]) for task in self.tasks}
        action_sizes = []
        for task, env in self.envs.items():
            if not isinstance(env.action_space, gymnasium.spaces.Discrete):
                msg = f"MultiDomainPOPGym needs discrete-action tasks; {task!r} has {env.action_space}."
                raise ValueError(msg)
            action_sizes.append(int(env.action_space.n))
        self.obs_width = max(_obs_width(env) for env in self.envs.values())
        self.warmup_episodes = warmup_episodes
        self.timer_scale = timer_scale
        self.observation_space = gymnasium.spaces.Box(
            -np.inf, np.inf, shape=(self.obs_width + self.EXTRA_FEATURES,), dtype=np.float32
        )
        self.action_space = gymnasium.spaces.Discrete(max(action_sizes))
        self.current_task = self.tasks[0]

    @property
    def env_name(self) -> str:
        """``popgym-multidomain-<task>``: per-task returns are logged under the task drawn this episode."""
        return f"popgym-multidomain-{self.current_task}"

    def _observe(self, raw: Any, valid: bool, reward: float) -> np.ndarray:
        obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        raw = np.asarray(raw, dtype=np.float32).reshape(-1)
        obs[: raw.shape[0]] = raw
        obs[-4] = self._t / self.timer_scale
        obs[-3] = self._episode / max(self.warmup_episodes, 1)
        obs[-2] = float(valid)
        obs[-1] = reward
        return obs

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        """Draws a task and starts its first (warm-up) episode."""
        super().reset(seed=seed)
        self.current_task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        self._env = self.envs[self.current_task]
        inner_seed = int(self.np_random.integers(2**31))
        raw, info = self._env.reset(seed=inner_seed)
        self._t = 0
        self._episode = 0
        self._restart_next = False
        return self._observe(raw, valid=True, reward=0.0), info

    def step(self, action: int | np.integer) -> tuple[np.ndarray, float, bool, bool, dict]:
        """One step of the current task (or the restart step between its episodes)."""
        self._t += 1
        n = int(cast(gymnasium.spaces.Discrete, self._env.action_space).n)  # checked Discrete in __init__
        valid = 0 <= int(action) < n
        if not valid:
            action = int(self.np_random.integers(n))
        if self._restart_next:
            raw, info = self._env.reset(seed=int(self.np_random.integers(2**31)))
            self._restart_next = False
            self._episode += 1
            return self._observe(raw, valid, 0.0), 0.0, False, False, info
        raw, reward, terminated, truncated, info = self._env.step(int(action))
        scored = self._episode >= self.warmup_episodes
        over = bool(terminated or truncated)
        done = over and scored
        self._restart_next = over and not scored
        return self._observe(raw, valid, float(reward)), float(reward) if scored else 0.0, done, False, info
