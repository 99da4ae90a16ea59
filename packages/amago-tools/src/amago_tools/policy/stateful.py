"""``StatefulPolicy``: a trained agent that acts in a plain gymnasium loop, keeping each env's memory.

It does, for envs it never sees, what ``AMAGOEnv`` and the experiment loop do around an agent: observations
become the agent's observation dict, the previous action and reward become its rl2 input, a time index
counts each env's steps, the memory is carried from step to step and restarted per env when an episode ends,
and the agent's actions are turned back into the env's (Discrete offsets, Box bounds).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from amago_core.data.timestep import Timestep
from amago_core.experiment.acting import env_actions, policy_input
from amago_core.experiment.agent_api import RolloutPolicy

# AMAGOEnv's own observation checks and action conversions: using them (not copies) keeps the policy's input
# and the env's actions exactly what they were in training.
from amago_core.rollout.action_mask import ACTION_MASK_KEY, encoder_space, mask_of, mask_segments
from amago_core.rollout.env import ObsChecker, make_action_adapter
from amago_core.rollout.spaces import PolicySpaces


def _per_env(value: Any, n_envs: int, dtype: type, what: str) -> np.ndarray:
    """``value`` as one entry per env (a scalar is accepted for a single env)."""
    arr: np.ndarray = np.asarray(value, dtype=dtype)
    if arr.size != n_envs:
        msg = f"{what} has {arr.size} value(s); pass one per env ({n_envs})."
        raise ValueError(msg)
    return arr.reshape(n_envs)


class StatefulPolicy:
    """A trained agent with the memory of ``n_envs`` envs; make one with ``amago_tools.policy.load_policy``.

    Usage with one gymnasium env::

        policy.reset()                      # a fresh episode (one env)
        obs, info = env.reset()
        reward, done = 0.0, False
        while not done:
            action = policy.act(obs, reward)
            obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated

    Args:
        agent: the agent (``RolloutPolicy``: ``init_hidden_state``, ``reset_hidden_state``, ``get_actions``).
        spaces: the spaces the agent was built with, and the env's own.
        device: where the agent runs.
        sample: sample actions from the policy (False: its most likely action, as evaluation does by default).
        name: names the policy in error messages.
    """

    def __init__(
        self,
        agent: RolloutPolicy,
        spaces: PolicySpaces,
        *,
        device: torch.device | str = "cpu",
        sample: bool = False,
        name: str = "policy",
    ) -> None:
        self.agent = agent
        self.spaces = spaces
        self.device = torch.device(device)
        self.sample = sample
        self.name = name
        self._actions = make_action_adapter(spaces.env_action_space)
        self._obs: ObsChecker | None = None
        self._memory: Any = None
        self._prev_action = np.zeros((0, self._actions.dim), dtype=self._actions.stored_dtype)
        self._time = np.zeros(0, dtype=np.int64)
        agent.eval()

    @property
    def n_envs(self) -> int:
        """Envs whose memory this policy keeps (0 before :meth:`reset`)."""
        return len(self._time)

    @property
    def memory(self) -> Any:
        """The agent's rollout memory of every env (hidden state, KV cache...; None for memoryless agents)."""
        return self._memory

    @property
    def time_idx(self) -> np.ndarray:
        """``(n_envs,)`` the time index each env's next observation gets (steps since its episode began)."""
        return self._time.copy()

    def reset(self, n_envs: int = 1) -> None:
        """Starts a fresh episode in each of ``n_envs`` envs (memory, time index, previous action and reward).

        Args:
            n_envs: 1 for a plain gymnasium env (observations and actions without a batch dim); more for a
                gymnasium vector env (a leading dim of ``n_envs`` on both).
        """
        if int(n_envs) < 1:
            msg = f"n_envs must be at least 1; got {n_envs}."
            raise ValueError(msg)
        n_envs = int(n_envs)
        seen = encoder_space(self.spaces.env_observation_space, self.spaces.action_mask, self.name)
        self._obs = ObsChecker(seen, n_envs)
        self._memory = self.agent.init_hidden_state(n_envs, self.device)
        self._prev_action = np.zeros((n_envs, self._actions.dim), dtype=self._actions.stored_dtype)
        self._time = np.zeros(n_envs, dtype=np.int64)

    def act(
        self, obs: Any, reward: Any = None, done: Any = None, *, info: Any = None, sample: bool | None = None
    ) -> Any:
        """The action for ``obs``, continuing each env's episode (memory, time index, previous action/reward).

        Args:
            obs: what the env returned (from ``reset`` or ``step``), with a leading env dim when ``n_envs > 1``.
            reward: the reward returned with ``obs`` (None or anything for an episode's first observation).
            done: per env, True when the step that returned ``obs`` ended the env's episode and ``obs`` is
                already the next episode's first observation (gymnasium vector envs with
                ``autoreset_mode=SAME_STEP``; a single env may instead call :meth:`reset` after ``env.reset()``).
                That env's memory restarts and its ``reward`` is ignored. None: no env finished.
            info: the ``info`` returned with ``obs``; needed when the run's env gave its action mask in ``info``
                (``spaces.action_mask``), so that the policy picks an allowed action.
            sample: overrides the policy's ``sample`` setting for this step.

        Returns:
            The env's action: an int (Discrete), a 0/1 array (MultiBinary) or an array within the env's bounds
            (Box); with a leading env dim when ``n_envs > 1``.

        Raises:
            RuntimeError: :meth:`reset` was never called.
            amago_core.rollout.EnvContractError: ``obs`` does not match the env's observation space.
            ValueError: ``reward`` or ``done`` does not have one value per env.
        """
        if self._obs is None:
            msg = f"{self.name}: call reset(n_envs) before act(); it sets how many envs the policy keeps memory for."
            raise RuntimeError(msg)
        n_envs = self.n_envs
        obs_rows = self._obs(obs, self.name)
        mask = self.spaces.action_mask
        if mask is not None:
            if mask.where == "info" and info is None:
                msg = (
                    f"{self.name} was trained with the action mask from info[{mask.key!r}]: pass "
                    "act(obs, reward, info=info) with the info the env returned."
                )
                raise ValueError(msg)
            width = int(np.prod(self.spaces.obs_space[ACTION_MASK_KEY].shape or (0,)))
            obs_rows[ACTION_MASK_KEY] = mask_of(
                mask,
                obs,
                info,
                n_envs,
                width,
                env_name=self.name,
                segments=mask_segments(self.spaces.action_space),
            )
        rewards = np.zeros(n_envs, dtype=np.float32)
        if reward is not None:
            rewards = _per_env(reward, n_envs, np.float32, "reward")
        if done is not None:
            restart = _per_env(done, n_envs, bool, "done")
            if restart.any():
                self._memory = self.agent.reset_hidden_state(self._memory, restart)
                self._time[restart] = 0
        # An episode's first observation comes with no previous action or reward (as AMAGOEnv's reset gives).
        starts = self._time == 0
        self._prev_action[starts] = 0
        rewards[starts] = 0.0
        timestep = Timestep(
            obs=obs_rows,
            prev_action=self._prev_action,
            reward=rewards,
            time_idx=self._time.copy(),
            terminal=np.zeros(n_envs, dtype=bool),
        )
        obs_t, rl2_t, time_t = policy_input(timestep, self.device)
        chosen, self._memory = self.agent.get_actions(
            obs_t, rl2_t, time_t, self._memory, sample=self.sample if sample is None else sample
        )
        stored = self._actions.to_stored(env_actions(chosen), n_envs)
        self._prev_action = stored
        self._time = self._time + 1
        return self._actions.to_env(stored, n_envs > 1)

    def __repr__(self) -> str:
        return (
            f"StatefulPolicy({self.name!r}, n_envs={self.n_envs}, sample={self.sample}, device={self.device})"
        )
