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
eps a uniform random action. Box: ``clip(a + eps * N(0, 1), -1, 1)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from amago_core.rollout.env import AMAGOEnv
from amago_envs.exploration.specs import BilevelConfig, EGreedyConfig, TMazeExplorationConfig


class BilevelEpsilonGreedy:
    """Wraps an ``AMAGOEnv`` (or anything with its interface) and perturbs the actions it is given.

    Args:
        env: the env to explore in (Discrete or Box actions).
        rollout_horizon: steps over which epsilon decays within an episode (``math.inf``: no decay).
        eps_start_start, eps_start_end, eps_end_start, eps_end_end: the two annealed endpoints (see module).
        steps_anneal: actor steps over which both endpoints anneal.
        randomize_eps: per-row random multiplier, redrawn on reset and on every episode end.
        seed: seed of the noise (None: fresh entropy).
        start_step: actor steps taken before this wrapper existed (a resumed run continues its schedule).
        quiet_steps: episode steps ``[first, last)`` explored at ``quiet_eps`` instead (None: none).
        quiet_eps: epsilon inside ``quiet_steps``.
    """

    def __init__(
        self,
        env: AMAGOEnv,
        rollout_horizon: float,
        eps_start_start: float = 1.0,
        eps_start_end: float = 0.05,
        eps_end_start: float = 0.8,
        eps_end_end: float = 0.01,
        steps_anneal: int = 1_000_000,
        randomize_eps: bool = True,
        seed: int | None = None,
        start_step: int = 0,
        quiet_steps: tuple[int, int] | None = None,
        quiet_eps: float = 0.0,
    ) -> None:
        if env.is_multibinary:
            msg = "epsilon-greedy exploration supports Discrete and Box actions, not MultiBinary; use exploration=None."
            raise ValueError(msg)
        if not rollout_horizon > 0:
            msg = f"rollout_horizon must be > 0; got {rollout_horizon}."
            raise ValueError(msg)
        self.env = env
        self.rollout_horizon = float(rollout_horizon)
        self.eps_start_start, self.eps_start_end = eps_start_start, eps_start_end
        self.eps_end_start, self.eps_end_end = eps_end_start, eps_end_end
        self.steps_anneal = int(steps_anneal)
        self.randomize_eps = randomize_eps
        self.rng = np.random.default_rng(seed)
        self.global_step = int(start_step)
        self.quiet_steps = quiet_steps
        self.quiet_eps = float(quiet_eps)
        self.multiplier = np.ones(env.batched_envs)
        self.last_eps = np.zeros(env.batched_envs)
        """Epsilon used on the last step, per row (for logging and tests)."""

    def __getattr__(self, name: str) -> Any:
        # Everything that is not exploration (spaces, env_name, step_count, ...) is the wrapped env's.
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def _redraw(self, rows: np.ndarray | slice) -> None:
        if self.randomize_eps:
            n = len(self.multiplier[rows])
            self.multiplier[rows] = self.rng.random(n)

    def _annealed(self, start: float, end: float) -> float:
        return max(start - self.global_step * (start - end) / self.steps_anneal, end)

    def epsilon(self, local_step: np.ndarray) -> np.ndarray:
        """Per-row epsilon at the current actor step for rows at episode step ``local_step``."""
        eps_start = self._annealed(self.eps_start_start, self.eps_start_end)
        eps_end = self._annealed(self.eps_end_start, self.eps_end_end)
        frac = np.asarray(local_step, dtype=np.float64) / self.rollout_horizon
        within = eps_start - (eps_start - eps_end) * frac
        eps = np.clip(self.multiplier * within, 0.0, 1.0)
        if self.quiet_steps is not None:
            first, last = self.quiet_steps
            steps = np.asarray(local_step)
            eps = np.where((steps >= first) & (steps < last), self.quiet_eps, eps)
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
            random_actions = self.rng.integers(0, self.env.action_dim, size=n)
            return np.where(explore, random_actions, flat).reshape(arr.shape).astype(arr.dtype)
        rows = arr.reshape(n, -1).astype(np.float32)
        if not np.all(np.abs(rows) <= 1.0 + 1e-5):
            # Checked before the noise: clipping after the noise would hide a policy that leaves [-1, 1].
            msg = f"continuous actions must be in [-1, 1] before exploration noise; got {rows.tolist()}."
            raise ValueError(msg)
        noisy = rows + eps[:, None] * self.rng.standard_normal(rows.shape)
        return np.clip(noisy, -1.0, 1.0).astype(np.float32).reshape(arr.shape)

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        """Resets the env and redraws every row's multiplier."""
        self._redraw(slice(None))
        return self.env.reset(*args, **kwargs)

    def step(self, action: Any) -> Any:
        """Steps the env with the noisy action; rows whose episode ended get a new multiplier."""
        noisy = self.add_noise(action)
        self.global_step += 1
        out = self.env.step(noisy)
        done = np.asarray(out[2]) | np.asarray(out[3])
        if done.any():
            self._redraw(np.flatnonzero(done))
        return out


class EpsilonGreedy(BilevelEpsilonGreedy):
    """Epsilon-greedy without the within-episode decay (``egreedy``)."""

    def __init__(
        self,
        env: AMAGOEnv,
        eps_start: float = 1.0,
        eps_end: float = 0.05,
        steps_anneal: int = 1_000_000,
        randomize_eps: bool = True,
        seed: int | None = None,
        start_step: int = 0,
        quiet_steps: tuple[int, int] | None = None,
        quiet_eps: float = 0.0,
    ) -> None:
        super().__init__(
            env,
            rollout_horizon=math.inf,
            eps_start_start=eps_start,
            eps_start_end=eps_end,
            eps_end_start=eps_start,
            eps_end_end=eps_end,
            steps_anneal=steps_anneal,
            randomize_eps=randomize_eps,
            seed=seed,
            start_step=start_step,
            quiet_steps=quiet_steps,
            quiet_eps=quiet_eps,
        )


def build_egreedy(
    config: EGreedyConfig, *, env: AMAGOEnv, seed: int | None = None, start_step: int = 0, **_: Any
) -> EpsilonGreedy:
    """Factory of the ``egreedy`` spec: wraps ``env``."""
    return EpsilonGreedy(
        env,
        eps_start=config.eps_start,
        eps_end=config.eps_end,
        steps_anneal=config.steps_anneal,
        randomize_eps=config.randomize_eps,
        seed=seed,
        start_step=start_step,
        quiet_steps=config.quiet_steps,
        quiet_eps=config.quiet_eps,
    )


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
    horizon = config.rollout_horizon or rollout_horizon
    if horizon is None:
        msg = (
            "bilevel exploration needs a rollout horizon: set exploration.rollout_horizon in the config "
            "(the number of steps in one rollout of your env)."
        )
        raise ValueError(msg)
    return BilevelEpsilonGreedy(
        env,
        rollout_horizon=horizon,
        eps_start_start=config.eps_start_start,
        eps_start_end=config.eps_start_end,
        eps_end_start=config.eps_end_start,
        eps_end_end=config.eps_end_end,
        steps_anneal=config.steps_anneal,
        randomize_eps=config.randomize_eps,
        seed=seed,
        start_step=start_step,
        quiet_steps=config.quiet_steps,
        quiet_eps=config.quiet_eps,
    )


def build_tmaze(
    config: TMazeExplorationConfig,
    *,
    env: AMAGOEnv,
    seed: int | None = None,
    start_step: int = 0,
    **_: Any,
) -> EpsilonGreedy:
    """Factory of the ``tmaze`` spec: epsilon-greedy whose quiet stretch is the T-Maze corridor."""
    return build_egreedy(config.as_egreedy(), env=env, seed=seed, start_step=start_step)
