"""AMAGO's exploration wrappers with AMAGO's constructors, on amago-envs' epsilon schedules.

AMAGO built ``exploration_wrapper_type(env)`` around each actor's env, with keyword defaults set by gin, and
scripts subclass its wrappers (``TMazeExploration(EpsilonGreedy)`` overriding ``current_eps``). Here
``EpsilonGreedy(env, eps_start=..., eps_end=..., steps_anneal=..., randomize_eps=...)`` and
``BilevelEpsilonGreedy(env, rollout_horizon, ...)`` are amago-envs' wrappers (the noise, the action-mask
handling, the per-row multipliers) taking AMAGO's arguments; the epsilon they use is :meth:`current_eps`, so a
subclass's override decides it, as in AMAGO.

An ``Experiment`` given one of these two classes itself picks the registered ``egreedy`` / ``bilevel`` component
(the config's options, ``use_config`` bindings included, apply); given a subclass of them, it builds the subclass
per actor through :class:`ScriptExploration`, as AMAGO did (``cls(env)``, the subclass's gin bindings applied).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from amago_core.rollout.env import AMAGOEnv
from amago_envs.exploration import wrappers
from amago_envs.exploration.specs import BilevelConfig, EGreedyConfig


class BilevelEpsilonGreedy(wrappers.BilevelEpsilonGreedy):
    """AMAGO's ``BilevelEpsilonGreedy(amago_env, rollout_horizon, ...)``: epsilon annealed per actor and decayed
    within each episode over ``rollout_horizon`` steps (amago's ``bilevel`` exploration).

    Args:
        amago_env: the ``AMAGOEnv`` to explore in (Discrete or Box actions).
        rollout_horizon: steps over which epsilon decays within an episode (required, as in AMAGO).
        eps_start_start: episode-start epsilon at the actor's first step.
        eps_start_end: episode-start epsilon after ``steps_anneal`` actor steps.
        eps_end_start: episode-end epsilon at the actor's first step.
        eps_end_end: episode-end epsilon after ``steps_anneal`` actor steps.
        steps_anneal: env steps (per actor) of the linear schedule.
        randomize_eps: scale epsilon by a U[0, 1) draw per env row, redrawn at resets and episode ends.

    Raises:
        TypeError: no ``rollout_horizon`` (AMAGO's ``gin.REQUIRED``).
    """

    def __init__(
        self,
        amago_env: AMAGOEnv,
        rollout_horizon: float | None = None,
        eps_start_start: float = 1.0,
        eps_start_end: float = 0.05,
        eps_end_start: float = 0.8,
        eps_end_end: float = 0.01,
        steps_anneal: int = 1_000_000,
        randomize_eps: bool = True,
    ) -> None:
        if rollout_horizon is None:
            msg = (
                f"{type(self).__name__} needs rollout_horizon (the steps of one rollout): pass it, or use the "
                "registered 'bilevel' exploration, whose horizon follows the run"
            )
            raise TypeError(msg)
        config = BilevelConfig(
            eps_start_start=eps_start_start,
            eps_start_end=eps_start_end,
            eps_end_start=eps_end_start,
            eps_end_end=eps_end_end,
            steps_anneal=steps_anneal,
            randomize_eps=randomize_eps,
        )
        self._explore(amago_env, config, rollout_horizon, seed=None, start_step=0)

    def _explore(
        self,
        env: AMAGOEnv,
        schedule: BilevelConfig,
        rollout_horizon: float,
        *,
        seed: int | None,
        start_step: int,
    ) -> None:
        super()._explore(env, schedule, rollout_horizon, seed=seed, start_step=start_step)
        # AMAGO's attribute names for the schedule, which a subclass's current_eps may read.
        self.eps_start_start = schedule.eps_start_start
        self.eps_start_end = schedule.eps_start_end
        self.eps_end_start = schedule.eps_end_start
        self.eps_end_end = schedule.eps_end_end
        self.randomize_eps = schedule.randomize_eps
        self.batched_envs = env.batched_envs

    @property
    def global_multiplier(self) -> np.ndarray:
        """AMAGO's name for each row's U[0, 1) epsilon multiplier."""
        multiplier: np.ndarray = self.multiplier
        return multiplier

    @global_multiplier.setter
    def global_multiplier(self, value: Any) -> None:
        shape = (self.env.batched_envs,)
        self.multiplier = np.broadcast_to(np.asarray(value, dtype=np.float64), shape).copy()

    @property
    def discrete(self) -> bool:
        """Whether the env's actions are Discrete (AMAGO's attribute)."""
        return bool(self.env.is_discrete)

    def current_eps(self, local_step: np.ndarray) -> np.ndarray:
        """Epsilon per env row for rows at episode step ``local_step`` (AMAGO's method; override it to change the
        schedule, as AMAGO's T-Maze example does)."""
        return wrappers.BilevelEpsilonGreedy.epsilon(self, local_step)

    def epsilon(self, local_step: np.ndarray) -> np.ndarray:
        """What the noise uses: :meth:`current_eps`, as a float array with one value per row."""
        steps = np.asarray(local_step)
        rows = self.env.batched_envs
        if rows == 1 or type(self).current_eps is BilevelEpsilonGreedy.current_eps:
            current = self.current_eps(steps)
            return np.broadcast_to(np.asarray(current, dtype=np.float64), (rows,)).copy()
        # A script's override was written for AMAGO's async and sync pools, where each wrapper held one env and
        # saw a one-element local_step (``local_step > a and local_step < b`` works there). amago's sync pool
        # steps its actors as one stack, so the override is asked once per row, with that row's step.
        eps = np.empty(rows, dtype=np.float64)
        for row in range(rows):
            current = np.asarray(self.current_eps(steps[row : row + 1]), dtype=np.float64).reshape(-1)
            eps[row] = current[row] if current.size == rows else current[0]
        return eps


class EpsilonGreedy(BilevelEpsilonGreedy, wrappers.EpsilonGreedy):
    """AMAGO's ``EpsilonGreedy(amago_env, eps_start, eps_end, steps_anneal, randomize_eps)``: epsilon annealed per
    actor, constant within an episode (amago's ``egreedy`` exploration).

    Args:
        amago_env: the ``AMAGOEnv`` to explore in (Discrete or Box actions).
        eps_start: epsilon at the actor's first step.
        eps_end: epsilon after ``steps_anneal`` actor steps (and from then on).
        steps_anneal: env steps (per actor) of the linear schedule.
        randomize_eps: scale epsilon by a U[0, 1) draw per env row, redrawn at resets and episode ends.
    """

    def __init__(
        self,
        amago_env: AMAGOEnv,
        eps_start: float = 1.0,
        eps_end: float = 0.05,
        steps_anneal: int = 1_000_000,
        randomize_eps: bool = True,
    ) -> None:
        config = EGreedyConfig(
            eps_start=eps_start, eps_end=eps_end, steps_anneal=steps_anneal, randomize_eps=randomize_eps
        )
        self._explore(amago_env, config.as_bilevel(), math.inf, seed=None, start_step=0)


AMAGO_EXPLORATIONS: dict[type, str] = {EpsilonGreedy: "egreedy", BilevelEpsilonGreedy: "bilevel"}
"""These classes given to an Experiment pick the registered exploration of that name."""


def _gin_bindings() -> str | None:
    """gin-config's bindings in this process (None: gin is not imported, so nothing was bound with it)."""
    import sys

    gin = sys.modules.get("gin")
    return None if gin is None else str(gin.config_str())


@dataclass(frozen=True)
class ScriptExploration:
    """Builds a script's subclass of :class:`EpsilonGreedy` / :class:`BilevelEpsilonGreedy` around one actor's env,
    as AMAGO did (``cls(env)``).

    The subclass's keyword defaults come from gin (``use_config({"TMazeExploration.horizon": 10})``). Async env
    workers start as fresh processes (forkserver), which gin's bindings would not reach: the bindings made when
    this was created are bound again there before the first build.

    Attributes:
        cls: the script's class.
        gin_bindings: gin-config's bindings when this was created (None: gin was not imported).
        creator_pid: the process that created this (which already has the bindings).
    """

    cls: type[BilevelEpsilonGreedy]
    gin_bindings: str | None = field(default_factory=_gin_bindings)
    creator_pid: int = field(default_factory=os.getpid)

    def __post_init__(self) -> None:
        # The run's record names the script's class (config.resolved.json: "class": "module:Name").
        object.__setattr__(self, "__qualname__", self.cls.__qualname__)
        object.__setattr__(self, "__module__", self.cls.__module__)

    def __reduce__(self) -> tuple[Any, ...]:
        # Async env workers receive their recipe through cloudpickle, which copies a script's classes by value,
        # gin's wrapper of __init__ (and its locks) included. The worker imports the script itself (as
        # __mp_main__, aliased __main__), so the class travels by name when that name finds it.
        by_name = _find_class(self.cls.__module__, self.cls.__qualname__) is self.cls
        cls: Any = (self.cls.__module__, self.cls.__qualname__) if by_name else self.cls
        return (_rebuild, (cls, self.gin_bindings, self.creator_pid))

    def __call__(self, env: AMAGOEnv, seed: int | None = None, **_: Any) -> BilevelEpsilonGreedy:
        """The wrapper around ``env``; ``seed`` seeds its noise (None: fresh entropy, as AMAGO's)."""
        if self.gin_bindings and os.getpid() != self.creator_pid:
            _bind_in_worker(self.gin_bindings)
        wrapper = self.cls(env)
        if seed is not None:
            wrapper.rng = np.random.default_rng(seed)
        return wrapper


def _find_class(module: str, qualname: str) -> Any:
    """The object ``module.qualname`` names (None when it names nothing)."""
    import importlib

    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return found


def _rebuild(cls: Any, gin_bindings: str | None, creator_pid: int) -> ScriptExploration:
    """Unpickles a :class:`ScriptExploration` (``cls``: the class, or its ``(module, qualname)``).

    Raises:
        ImportError: the class's module does not define it in this process.
    """
    if isinstance(cls, tuple):
        module, qualname = cls
        found = _find_class(module, qualname)
        if found is None:
            msg = (
                f"the exploration class {module}.{qualname} cannot be found in this env worker; define it at the top "
                "level of the script (not under `if __name__ == '__main__':`), or use env_mode='sync'"
            )
            raise ImportError(msg)
        cls = found
    return ScriptExploration(cls, gin_bindings, creator_pid)


_BOUND_IN_WORKER: set[str] = set()


def _bind_in_worker(bindings: str) -> None:
    """Binds the creator's gin bindings once in this worker process."""
    if bindings in _BOUND_IN_WORKER:
        return
    import gin

    gin.parse_config(bindings)
    _BOUND_IN_WORKER.add(bindings)


def exploration_for_experiment(value: Any) -> Any:
    """What an Experiment's ``exploration_wrapper_type`` becomes: AMAGO's two classes, their registered names; a
    script's subclass of them, a :class:`ScriptExploration`; anything else, itself."""
    if isinstance(value, type) and issubclass(value, BilevelEpsilonGreedy):
        return AMAGO_EXPLORATIONS.get(value) or ScriptExploration(value)
    return value


__all__ = [
    "AMAGO_EXPLORATIONS",
    "BilevelEpsilonGreedy",
    "EpsilonGreedy",
    "ScriptExploration",
    "exploration_for_experiment",
]
