"""Exploration wrappers: noise added to the policy's action *before* ``AMAGOEnv`` sees it.

Because ``AMAGOEnv`` stores the action it receives as the next timestep's previous action, the executed noisy
action is what is saved to disk and what the policy reads back in its rl2 input.

Schedule, with ``g`` the number of steps this wrapper has taken (per actor) and ``t`` the row's step within its
episode::

    eps_start(g) = max(eps_start_start - g * (eps_start_start - eps_start_end) / steps_anneal, eps_start_end)
    eps_end(g)   = likewise with eps_end_*
    eps          = m * (eps_start(g) - (eps_start(g) - eps_end(g)) * t / rollout_horizon)

where ``m ~ U[0, 1)`` per row is redrawn at reset and whenever that row's episode ends (``randomize_eps``), else
1; rows whose ``t`` lies in ``quiet_steps = [first, last)`` use ``quiet_eps`` instead. Discrete: with probability
eps a uniform random action (among those an action mask allows; MultiDiscrete: every dimension at once). Box:
``clip(a + eps * N(0, 1), -1, 1)``.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from amago_core.rollout.action_mask import ACTION_MASK_KEY, sample_allowed
from amago_core.rollout.env import AMAGOEnv
from amago_envs.exploration.specs import BilevelConfig, EGreedyConfig, TMazeExplorationConfig

_HORIZON_MISSING = (
    "bilevel exploration needs a rollout horizon: set exploration.rollout_horizon in the config "
    "(the number of steps in one rollout of your env)."
)


class BilevelEpsilonGreedy:
    """Wraps an ``AMAGOEnv`` (or anything with its interface) and perturbs the actions it is given.

    Args:
        env: the env to explore in (Discrete or Box actions).
        config: the schedule (see module); its ``rollout_horizon`` is required here. None: the defaults, which
            name no horizon.
        seed: seed of the noise (None: fresh entropy).
        start_step: actor steps taken before this wrapper existed (a resumed run continues its schedule).

    Raises:
        ValueError: MultiBinary actions, or a config without a rollout horizon.

    Attributes:
        schedule: the schedule followed, as a bilevel config.
        rollout_horizon: steps over which epsilon decays within an episode (``math.inf``: no decay).
        global_step: actor steps taken so far (the annealing clock).
    """

    def __init__(
        self,
        env: AMAGOEnv,
        config: BilevelConfig | None = None,
        *,
        seed: int | None = None,
        start_step: int = 0,
    ) -> None:
        config = BilevelConfig() if config is None else config
        if config.rollout_horizon is None:
            raise ValueError(_HORIZON_MISSING)
        self.start_schedule(env, config, config.rollout_horizon, seed=seed, start_step=start_step)

    def start_schedule(
        self,
        env: AMAGOEnv,
        schedule: BilevelConfig,
        rollout_horizon: float,
        *,
        seed: int | None,
        start_step: int,
    ) -> None:
        """Sets up the wrapper for ``env`` with ``schedule``; ``rollout_horizon`` is separate from ``schedule``
        because egreedy's is infinite. The one setup path: a subclass that builds its schedule another way (the
        AMAGO compatibility layer's ``EpsilonGreedy``, from AMAGO's arguments) calls it, or extends it."""
        if env.is_multibinary:
            msg = "epsilon-greedy exploration supports Discrete and Box actions, not MultiBinary; use exploration=None."
            raise ValueError(msg)
        # A horizon filled in from the builder's context skips the config's validation, so it is checked here.
        if not rollout_horizon > 0:
            msg = f"rollout_horizon must be > 0; got {rollout_horizon}."
            raise ValueError(msg)
        self.env = env
        self.schedule = schedule
        self.rollout_horizon = float(rollout_horizon)
        self.rng = np.random.default_rng(seed)
        self.global_step = int(start_step)
        self.multiplier = np.ones(env.batched_envs)
        self.last_eps = np.zeros(env.batched_envs)
        self.allowed: np.ndarray | None = None
        """The action mask of the timestep the policy acts on next (None: the env has none)."""
        """Epsilon used on the last step, per row (for logging and tests)."""

    def __getattr__(self, name: str) -> Any:
        # Everything that is not exploration (spaces, env_name, step_count, ...) is the wrapped env's.
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def _redraw(self, rows: np.ndarray | slice) -> None:
        if self.schedule.randomize_eps:
            n = len(self.multiplier[rows])
            self.multiplier[rows] = self.rng.random(n)

    def _annealed(self, start: float, end: float) -> float:
        return max(start - self.global_step * (start - end) / self.schedule.steps_anneal, end)

    def epsilon(self, local_step: np.ndarray) -> np.ndarray:
        """Per-row epsilon at the current actor step for rows at episode step ``local_step``."""
        schedule = self.schedule
        eps_start = self._annealed(schedule.eps_start_start, schedule.eps_start_end)
        eps_end = self._annealed(schedule.eps_end_start, schedule.eps_end_end)
        frac = np.asarray(local_step, dtype=np.float64) / self.rollout_horizon
        within = eps_start - (eps_start - eps_end) * frac
        eps = np.clip(self.multiplier * within, 0.0, 1.0)
        if schedule.quiet_steps is not None:
            first, last = schedule.quiet_steps
            steps = np.asarray(local_step)
            eps = np.where((steps >= first) & (steps < last), schedule.quiet_eps, eps)
        return eps

    def add_noise(self, action: Any) -> Any:
        """The noisy version of ``action`` (same shape and dtype as given)."""
        n = self.env.batched_envs
        eps = self.epsilon(self.env.step_count)
        self.last_eps = eps
        arr = np.asarray(action)
        if self.env.is_discrete:
            flat = arr.reshape(n).astype(np.int64)
            explore = self.rng.random(n) < eps
            if self.allowed is not None:  # random actions among those the env allows now
                random_actions = sample_allowed(self.rng, self.allowed)
            else:
                random_actions = self.rng.integers(0, self.env.action_dim, size=n)
            return np.where(explore, random_actions, flat).reshape(arr.shape).astype(arr.dtype)
        if getattr(self.env, "is_multidiscrete", False):
            return self._random_multidiscrete(arr, eps)
        rows = arr.reshape(n, -1).astype(np.float32)
        if not np.all(np.abs(rows) <= 1.0 + 1e-5):
            # Checked before the noise: clipping after the noise would hide a policy that leaves [-1, 1].
            msg = f"continuous actions must be in [-1, 1] before exploration noise; got {rows.tolist()}."
            raise ValueError(msg)
        noisy = rows + eps[:, None] * self.rng.standard_normal(rows.shape)
        return np.clip(noisy, -1.0, 1.0).astype(np.float32).reshape(arr.shape)

    def _random_multidiscrete(self, action: np.ndarray, eps: np.ndarray) -> np.ndarray:
        """With probability eps per row, every dimension a uniformly random (allowed) choice."""
        space = self.env.action_space
        if not isinstance(space, gym.spaces.MultiDiscrete):  # is_multidiscrete says it is
            msg = f"expected a MultiDiscrete action space, got {space!r}"
            raise TypeError(msg)
        n, sizes = self.env.batched_envs, [int(k) for k in space.nvec]
        chosen = action.reshape(n, len(sizes)).astype(np.int64)
        explore = self.rng.random(n) < eps
        masks = np.split(self.allowed, np.cumsum(sizes)[:-1], axis=1) if self.allowed is not None else None
        random = np.stack(
            [
                sample_allowed(self.rng, masks[d]) if masks is not None else self.rng.integers(0, k, size=n)
                for d, k in enumerate(sizes)
            ],
            axis=1,
        )
        return np.where(explore[:, None], random, chosen).reshape(action.shape).astype(action.dtype)

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        """Resets the env and redraws every row's multiplier."""
        self._redraw(slice(None))
        out = self.env.reset(*args, **kwargs)
        self._remember_mask(out[0])
        return out

    def step(self, action: Any) -> Any:
        """Steps the env with the noisy action; rows whose episode ended get a new multiplier."""
        noisy = self.add_noise(action)
        self.global_step += 1
        out = self.env.step(noisy)
        done = np.asarray(out[2]) | np.asarray(out[3])
        if done.any():
            self._redraw(np.flatnonzero(done))
        # A vectorised env's finished rows act next from its reset timestep (their new episode's mask).
        reset_timestep = getattr(self.env, "reset_timestep", None)
        self._remember_mask(reset_timestep if reset_timestep is not None else out[0])
        return out

    def _remember_mask(self, timestep: Any) -> None:
        """Keeps the action mask of the timestep the policy acts on next (None when the env has none)."""
        obs = getattr(timestep, "obs", None)
        self.allowed = obs.get(ACTION_MASK_KEY) if isinstance(obs, dict) else None


class EpsilonGreedy(BilevelEpsilonGreedy):
    """Epsilon-greedy without the within-episode decay (``egreedy``).

    Args:
        env: the env to explore in (Discrete or Box actions).
        config: the schedule (None: the defaults, AMAGO's).
        seed: seed of the noise (None: fresh entropy).
        start_step: actor steps taken before this wrapper existed (a resumed run continues its schedule).
    """

    def __init__(
        self,
        env: AMAGOEnv,
        config: EGreedyConfig | None = None,
        *,
        seed: int | None = None,
        start_step: int = 0,
    ) -> None:
        config = EGreedyConfig() if config is None else config
        self.start_schedule(env, config.as_bilevel(), math.inf, seed=seed, start_step=start_step)


def build_egreedy(
    config: EGreedyConfig, *, env: AMAGOEnv, seed: int | None = None, start_step: int = 0, **_: Any
) -> EpsilonGreedy:
    """Factory of the ``egreedy`` spec: wraps ``env``."""
    return EpsilonGreedy(env, config, seed=seed, start_step=start_step)


def build_bilevel(
    config: BilevelConfig,
    *,
    env: AMAGOEnv,
    rollout_horizon: int | None = None,
    seed: int | None = None,
    start_step: int = 0,
    **_: Any,
) -> BilevelEpsilonGreedy:
    """Factory of the ``bilevel`` spec: wraps ``env``; the horizon comes from the config or the context."""
    if config.rollout_horizon is None and rollout_horizon is not None:
        config = config.model_copy(update={"rollout_horizon": rollout_horizon})
    return BilevelEpsilonGreedy(env, config, seed=seed, start_step=start_step)


def build_tmaze(
    config: TMazeExplorationConfig,
    *,
    env: AMAGOEnv,
    seed: int | None = None,
    start_step: int = 0,
    **_: Any,
) -> EpsilonGreedy:
    """Factory of the ``tmaze`` spec: epsilon-greedy whose quiet stretch is the T-Maze corridor."""
    return EpsilonGreedy(env, config.as_egreedy(), seed=seed, start_step=start_step)
