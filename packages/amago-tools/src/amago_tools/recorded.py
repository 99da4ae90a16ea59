"""A short rollout of the eager agent, recorded step by step: what an exported step function is checked against.

Each step keeps the policy's input (observation dict, rl2, time index) and the eager agent's output (its
action and its memory after the step), computed the way the experiment loop computes them: memory carried
across steps, and restarted with ``reset_hidden_state`` for the envs whose episode ended.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from amago_core.config.component import ComponentConfig
from amago_core.data.timestep import Timestep
from amago_core.experiment.acting import env_actions, policy_input
from amago_core.plugins.registry import Registries
from amago_core.rollout.env import make_action_adapter
from amago_tools.policy.loader import LoadedRun
from amago_tools.policy.memory import MemoryLayout

SYNTHETIC_EPISODE_STEPS = (1, 12)
"""Episode lengths (inclusive range) of the rollout made up from the spaces when the run names no env."""


@dataclass
class RecordedSteps:
    """Inputs and eager outputs of ``len(time_idx)`` steps of ``n_envs`` envs.

    Attributes:
        obs: per step, observation key -> ``(n_envs, ...)``.
        rl2: per step, ``(n_envs, 1 + A)`` float32 previous reward and action.
        time_idx: per step, ``(n_envs,)`` int64 steps since each env's episode began.
        actions: per step, the eager agent's ``(n_envs, ...)`` actions (its deterministic mode).
        memory: per step, the eager agent's memory after the step (flattened by the layout).
        source: what was stepped (an env id, or the spaces when the run names no env).
    """

    obs: list[dict[str, np.ndarray]] = field(default_factory=list)
    rl2: list[np.ndarray] = field(default_factory=list)
    time_idx: list[np.ndarray] = field(default_factory=list)
    actions: list[torch.Tensor] = field(default_factory=list)
    memory: list[list[torch.Tensor]] = field(default_factory=list)
    source: str = ""

    def __len__(self) -> int:
        return len(self.time_idx)


class _MadeUpEnvs:
    """Stands in for the envs of a run that names no env id: observations sampled from the agent's space,
    random rewards, and episodes of random lengths, stepped with the agent's own actions."""

    def __init__(self, loaded: LoadedRun, n_envs: int, seed: int) -> None:
        self.spaces = loaded.spaces
        self.spaces.obs_space.seed(seed)
        self.rng = np.random.default_rng(seed)
        self.actions = make_action_adapter(self.spaces.action_space)
        self.n_envs = n_envs
        self.left = self.rng.integers(*SYNTHETIC_EPISODE_STEPS, endpoint=True, size=n_envs)

    def _obs(self) -> dict[str, np.ndarray]:
        rows = [self.spaces.obs_space.sample() for _ in range(self.n_envs)]
        return {key: np.stack([np.asarray(row[key]) for row in rows]) for key in rows[0]}

    def reset(self) -> Timestep:
        return Timestep(
            obs=self._obs(),
            prev_action=np.zeros((self.n_envs, self.actions.dim), dtype=self.actions.stored_dtype),
            reward=np.zeros(self.n_envs, dtype=np.float32),
            time_idx=np.zeros(self.n_envs, dtype=np.int64),
            terminal=np.zeros(self.n_envs, dtype=bool),
        )

    def step(self, timestep: Timestep, actions: np.ndarray) -> tuple[Timestep, np.ndarray]:
        self.left -= 1
        done = self.left <= 0
        self.left[done] = self.rng.integers(*SYNTHETIC_EPISODE_STEPS, endpoint=True, size=int(done.sum()))
        after = Timestep(
            obs=self._obs(),
            prev_action=self.actions.to_stored(actions, self.n_envs),
            reward=self.rng.normal(size=self.n_envs).astype(np.float32),
            time_idx=timestep.time_idx + 1,
            terminal=np.zeros(self.n_envs, dtype=bool),
        )
        return after.reset_version(np.flatnonzero(done)), done


class _SuiteEnvs:
    """``n_envs`` one-row envs of the run's env suite (its ``test`` split), each reset on its own when it ends."""

    def __init__(self, envs: list[Any], seed: int) -> None:
        self.envs = envs
        self.seed = seed

    @classmethod
    def open(
        cls, suite_config: ComponentConfig, registries: Registries, n_envs: int, seed: int
    ) -> _SuiteEnvs | None:
        """The envs, or None when the suite's envs are already vectorised (several rows each)."""
        suite = registries.env_suites.build(suite_config)
        first = suite.make_env("test")
        if first.batched_envs != 1:
            first.close()
            return None
        return cls([first, *(suite.make_env("test") for _ in range(n_envs - 1))], seed)

    def reset(self) -> Timestep:
        return Timestep.concat([env.reset(seed=self.seed + i)[0] for i, env in enumerate(self.envs)])

    def step(self, timestep: Timestep, actions: np.ndarray) -> tuple[Timestep, np.ndarray]:
        rows, done = [], np.zeros(len(self.envs), dtype=bool)
        for i, env in enumerate(self.envs):
            row, _, terminated, truncated, _ = env.step(actions[i : i + 1])
            done[i] = bool(terminated[0] or truncated[0])
            rows.append(env.reset()[0] if done[i] else row)
        return Timestep.concat(rows), done

    def close(self) -> None:
        for env in self.envs:
            env.close()


def record_steps(
    loaded: LoadedRun,
    layout: MemoryLayout,
    registries: Registries,
    *,
    n_envs: int,
    steps: int,
    seed: int = 0,
) -> RecordedSteps:
    """Steps ``n_envs`` envs of the run's env suite with the eager agent; made-up inputs when the run names no
    env, or its suite's envs are already vectorised. The agent must be on the CPU (where exports are traced)."""
    agent: Any = loaded.agent
    device = torch.device("cpu")
    suite_config = loaded.env
    envs: _SuiteEnvs | _MadeUpEnvs | None = None
    source = ""
    if suite_config is not None:
        envs = _SuiteEnvs.open(suite_config, registries, n_envs, seed)
        source = f"{steps} steps of {n_envs} {suite_config.kind} env(s)"
    if envs is None:
        envs = _MadeUpEnvs(loaded, n_envs, seed)
        source = f"{steps} steps of {n_envs} made-up env(s) (observations sampled from the agent's space)"
    recorded = RecordedSteps(source=source)
    try:
        timestep = envs.reset()
        memory = agent.init_hidden_state(n_envs, device)
        with torch.no_grad():
            for _ in range(steps):
                inp = timestep.as_input()
                obs, rl2, time_idx = policy_input(timestep, device)
                actions, memory = agent.get_actions(obs, rl2, time_idx, memory, sample=False)
                recorded.obs.append({key: np.ascontiguousarray(value) for key, value in inp.obs.items()})
                recorded.rl2.append(np.ascontiguousarray(inp.rl2, dtype=np.float32))
                recorded.time_idx.append(inp.time_idx[:, 0].copy())
                recorded.actions.append(actions[:, 0].clone())
                recorded.memory.append([tensor.clone() for tensor in layout.flatten(memory)])
                timestep, done = envs.step(timestep, env_actions(actions))
                if done.any():
                    memory = agent.reset_hidden_state(memory, done)
    finally:
        if isinstance(envs, _SuiteEnvs):
            envs.close()
    return recorded
