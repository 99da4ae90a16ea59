"""``KShotMetaworld``: k trials on one Meta-World task per meta-episode, with goals built lazily per environment.

Meta-World's benchmark classes build every goal of every environment up front (``metaworld.ML45()`` takes about
30 s on two CPU cores). This module builds the same goals (Meta-World's own ``_make_tasks`` with the benchmark's
seed, one environment at a time) only when a meta-episode first draws that environment, and caches them per
process, so an ML45 run starts in seconds and a process only pays for the environments it visits.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Any, Literal

import gymnasium
import metaworld
import numpy as np
from metaworld import env_dict

from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX

SPLITS = ("train", "test")


def benchmark_envs(benchmark: str, split: str) -> tuple[str, ...]:
    """Names of the Meta-World environments of ``benchmark`` (``ml45``, ``ml1-reach-v3``...) in ``split``.

    Multi-task benchmarks have no test environments; their ``test`` split is the train one.

    Raises:
        ValueError: unknown benchmark or split.
    """
    if split not in SPLITS:
        msg = f"Meta-World split must be 'train' or 'test', got {split!r}."
        raise ValueError(msg)
    family, _, env = benchmark.partition("-")
    if family in ("ml1", "mt1"):
        if env not in env_dict.ALL_V3_ENVIRONMENTS:
            msg = f"{env!r} is not a Meta-World v3 environment; see metaworld.env_dict.ALL_V3_ENVIRONMENTS."
            raise ValueError(msg)
        return (env,)
    tables = {
        "ml10": env_dict.ML10_V3,
        "ml25": env_dict.ML25_V3,
        "ml45": env_dict.ML45_V3,
    }
    if family in tables:
        part: Literal["train", "test"] = "train" if split == "train" else "test"  # split was checked above
        return tuple(tables[family][part])
    multi_task = {"mt10": env_dict.MT10_V3, "mt25": env_dict.MT25_V3, "mt50": env_dict.MT50_V3}
    if family in multi_task:
        return tuple(multi_task[family])
    msg = f"unknown Meta-World benchmark {benchmark!r}; use ml1-<env>, mt1-<env>, ml10, ml25, ml45, mt10, mt25 or mt50."
    raise ValueError(msg)


@functools.cache
def env_tasks(benchmark: str, split: str, env_name: str, seed: int | None) -> tuple[Any, ...]:
    """The Meta-World ``Task``s (50 goals) of one environment of a benchmark split, built once per process.

    ML benchmarks hide the goal from the observation, MT benchmarks show it (Meta-World's overrides). ML1 draws
    its test goals with ``seed + 1`` as ``metaworld.ML1`` does, so its train and test goals differ.
    """
    multi_task = benchmark.startswith("mt")
    override = {"partially_observable": not multi_task}
    if benchmark.startswith("ml1-") and split == "test" and seed is not None:
        seed = seed + 1
    args_kwargs = env_dict.ML1_ARGS_KWARGS[env_name]
    classes = OrderedDict([(env_name, env_dict.ALL_V3_ENVIRONMENTS[env_name])])
    # Meta-World's own goal builder, so goals match what its benchmark classes would make with this seed.
    return tuple(metaworld._make_tasks(classes, {env_name: args_kwargs}, override, seed=seed))


class KShotMetaworld(gymnasium.Env[np.ndarray, np.ndarray]):
    """``k_episodes`` trials of at most ``max_episode_steps`` steps on one random task of a Meta-World benchmark.

    Each ``reset`` draws an environment of the split, then one of its goals. A trial ends at the step limit (or
    when Meta-World ends it); the robot is then reset on the same task (a soft reset) and the observation's last
    entry, 1 on the first observation of every trial and 0 otherwise, tells the agent so. The meta-episode
    terminates after the last trial. On that step ``info`` carries ``Trial {i} Success`` (whether the task was
    solved at any step of trial i) and ``Total Successes`` for logging; ``env_name`` is the Meta-World
    environment name, so metrics are kept per environment.

    Args:
        benchmark: ``ml1-<env>``, ``mt1-<env>``, ``ml10``, ``ml25``, ``ml45``, ``mt10``, ``mt25`` or ``mt50``.
        split: ``train`` or ``test`` (test environments / goals; multi-task benchmarks reuse train).
        k_episodes: trials per meta-episode.
        max_episode_steps: steps per trial (at most 500).
        benchmark_seed: seed of the goal sampling (None: new goals per process).
        reward_scales: reward multiplier per Meta-World environment name (others keep their rewards).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        benchmark: str,
        split: str = "train",
        k_episodes: int = 3,
        max_episode_steps: int = 500,
        benchmark_seed: int | None = 0,
        reward_scales: dict[str, float] | None = None,
    ):
        if k_episodes < 1 or not 1 <= max_episode_steps <= 500:
            msg = f"need k_episodes >= 1 and 1 <= max_episode_steps <= 500; got {k_episodes}, {max_episode_steps}."
            raise ValueError(msg)
        self.benchmark = benchmark
        self.split = split
        self.env_names = benchmark_envs(benchmark, split)
        self.k_episodes = k_episodes
        self.max_episode_steps = max_episode_steps
        self.benchmark_seed = benchmark_seed
        self.reward_scales = dict(reward_scales or {})
        self._envs: dict[str, Any] = {}  # one MuJoCo env per Meta-World environment this process visited
        self.env_name = self.env_names[0]
        self._env = self._env_for(self.env_name)
        obs_dim = int(self._env.observation_space.shape[0]) + 1
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, shape=(obs_dim,), dtype=np.float32)
        space = self._env.action_space
        self.action_space = gymnasium.spaces.Box(space.low, space.high, shape=space.shape, dtype=np.float32)
        self._over = True

    def _env_for(self, name: str) -> Any:
        if name not in self._envs:
            self._envs[name] = env_dict.ALL_V3_ENVIRONMENTS[name]()
        return self._envs[name]

    def _observe(self, obs: np.ndarray, soft_reset: bool) -> np.ndarray:
        return np.concatenate([np.asarray(obs, dtype=np.float32), [np.float32(soft_reset)]])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draws a task and starts its first trial."""
        super().reset(seed=seed)
        self.env_name = self.env_names[int(self.np_random.integers(len(self.env_names)))]
        tasks = env_tasks(self.benchmark, self.split, self.env_name, self.benchmark_seed)
        self._env = self._env_for(self.env_name)
        self._env.set_task(tasks[int(self.np_random.integers(len(tasks)))])
        self.trial = 0
        self.trial_steps = 0
        self.trial_successes: list[bool] = []
        self._solved_this_trial = False
        self._over = False
        obs, _ = self._env.reset()
        return self._observe(obs, soft_reset=True), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Steps the current trial; soft-resets the task when the trial ends."""
        if self._over:
            msg = "KShotMetaworld meta-episode is over (or never started); call reset() before step()."
            raise RuntimeError(msg)
        obs, reward, terminated, truncated, info = self._env.step(np.asarray(action, dtype=np.float64))
        reward = float(reward) * self.reward_scales.get(self.env_name, 1.0)
        self.trial_steps += 1
        self._solved_this_trial |= bool(info.get("success", 0.0))
        out_info: dict[str, Any] = {"success": bool(info.get("success", 0.0))}
        soft_reset = False
        if terminated or truncated or self.trial_steps >= self.max_episode_steps:
            self.trial_successes.append(self._solved_this_trial)
            self.trial += 1
            if self.trial >= self.k_episodes:
                self._over = True
                # All metrics on the final step: async pools reset right after it.
                for i, solved in enumerate(self.trial_successes):
                    out_info[f"{AMAGO_ENV_LOG_PREFIX} Trial {i} Success"] = float(solved)
                out_info[f"{AMAGO_ENV_LOG_PREFIX} Total Successes"] = float(sum(self.trial_successes))
                return self._observe(obs, soft_reset=False), float(reward), True, False, out_info
            obs, _ = self._env.reset()
            self.trial_steps = 0
            self._solved_this_trial = False
            soft_reset = True
        return self._observe(obs, soft_reset=soft_reset), float(reward), False, False, out_info

    def close(self) -> None:
        """Closes every MuJoCo env this instance made."""
        for env in self._envs.values():
            env.close()
        self._envs.clear()
