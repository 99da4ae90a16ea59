"""AMAGO's exploration wrappers with AMAGO's constructors, on amago-envs' epsilon schedules.

AMAGO built ``exploration_wrapper_type(env)`` around each actor's env, with keyword defaults set by gin, and
scripts subclass its wrappers (``TMazeExploration(EpsilonGreedy)`` overriding ``current_eps``). Here
``EpsilonGreedy(env, eps_start=..., eps_end=..., steps_anneal=..., randomize_eps=...)`` and
``BilevelEpsilonGreedy(env, rollout_horizon, ...)`` are amago-envs' wrappers (the noise, the action-mask
handling, the per-row multipliers) taking AMAGO's arguments; the epsilon they use is :meth:`current_eps`, so a
subclass's override decides it, as in AMAGO.

AMAGO's other extension point works too: a subclass of :class:`ExplorationWrapper` (or of the two wrappers)
overriding ``add_exploration_noise(action, local_step)`` gets AMAGO's ``(batched_envs, action dim)`` actions and
``(batched_envs,)`` episode steps, and what it returns is the action taken.

An ``Experiment`` given one of these two classes itself picks the registered ``egreedy`` / ``bilevel`` component
(the config's options, ``use_config`` bindings included, apply); given a subclass of them (or of
``ExplorationWrapper``), it builds the subclass per actor through :class:`ScriptExploration`, as AMAGO did
(``cls(env)``, the subclass's gin bindings applied).

With gin-config installed, both classes are gin configurables under AMAGO's names
(``amago.envs.exploration.EpsilonGreedy``), so a binding of a base class's parameter
(``EpsilonGreedy.randomize_eps = False``) reaches a script's subclass with gin's own rule: only for arguments the
subclass does not pass itself.
"""

from __future__ import annotations

import abc
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from amago_core.rollout.env import AMAGOEnv
from amago_envs.exploration import wrappers
from amago_envs.exploration.specs import BilevelConfig, EGreedyConfig


class ExplorationWrapper(abc.ABC):
    """AMAGO's ``ExplorationWrapper(amago_env)``: wraps an ``AMAGOEnv`` and replaces each action by what
    :meth:`add_exploration_noise` returns. Everything else (spaces, ``env_name``, ``step_count``...) is the env's.

    Attributes:
        env: the wrapped env.
        batched_envs: rows the env steps at once.
    """

    def __init__(self, amago_env: AMAGOEnv) -> None:
        self.env = amago_env
        self.batched_envs = amago_env.batched_envs

    def __getattr__(self, name: str) -> Any:
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    @abc.abstractmethod
    def add_exploration_noise(self, action: np.ndarray, local_step: np.ndarray) -> np.ndarray:
        """The action to take instead of ``action``.

        Args:
            action: ``(batched_envs, action dim)`` (Discrete: ``(batched_envs, 1)`` indices; Box: in [-1, 1]).
            local_step: ``(batched_envs,)`` steps since each row's episode started.
        """

    def action(self, action: Any) -> Any:
        """AMAGO's ``action``: ``action`` as ``(batched_envs, action dim)`` through :meth:`add_exploration_noise`,
        returned in the shape and dtype it came in.

        Raises:
            ValueError: a Box action outside [-1, 1] (checked before the noise, as AMAGO asserted).
        """
        given = np.asarray(action)
        rows = given.reshape(self.batched_envs, -1)
        if not self.env.is_discrete and not np.all(np.abs(rows) <= 1.0 + 1e-5):
            msg = f"continuous actions must be in [-1, 1] before exploration noise; got {rows.tolist()}."
            raise ValueError(msg)
        noisy = np.asarray(self.add_exploration_noise(rows, np.asarray(self.env.step_count)))
        return noisy.reshape(given.shape).astype(given.dtype, copy=False)

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        """Resets the env."""
        return self.env.reset(*args, **kwargs)

    def step(self, action: Any) -> Any:
        """Steps the env with :meth:`action` of ``action``."""
        return self.env.step(self.action(action))


class BilevelEpsilonGreedy(wrappers.BilevelEpsilonGreedy, ExplorationWrapper):
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
        self.start_schedule(amago_env, config, rollout_horizon, seed=None, start_step=0)

    def start_schedule(
        self,
        env: AMAGOEnv,
        schedule: BilevelConfig,
        rollout_horizon: float,
        *,
        seed: int | None,
        start_step: int,
    ) -> None:
        super().start_schedule(env, schedule, rollout_horizon, seed=seed, start_step=start_step)
        self._noise_steps: np.ndarray | None = None
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

    def add_noise(self, action: Any) -> Any:
        """What ``step`` takes: ``action`` through AMAGO's :meth:`ExplorationWrapper.action`, so a subclass's
        :meth:`add_exploration_noise` decides it."""
        return ExplorationWrapper.action(self, action)

    def add_exploration_noise(self, action: np.ndarray, local_step: np.ndarray) -> np.ndarray:
        """AMAGO's noise at episode steps ``local_step``: with probability :meth:`current_eps` a random action
        (Discrete), or Gaussian noise of that scale clipped to [-1, 1] (Box); override it to add your own."""
        self._noise_steps = np.asarray(local_step)
        try:
            noisy: np.ndarray = wrappers.BilevelEpsilonGreedy.add_noise(self, action)
        finally:
            self._noise_steps = None
        return noisy

    def epsilon(self, local_step: np.ndarray) -> np.ndarray:
        """What the noise uses: :meth:`current_eps`, as a float array with one value per row."""
        steps = np.asarray(local_step) if self._noise_steps is None else self._noise_steps
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
        self.start_schedule(amago_env, config.as_bilevel(), math.inf, seed=None, start_step=0)


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

    cls: type[ExplorationWrapper]
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

    def __call__(self, env: AMAGOEnv, seed: int | None = None, **_: Any) -> ExplorationWrapper:
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
    script's subclass of them or of ``ExplorationWrapper``, a :class:`ScriptExploration`; anything else, itself."""
    if isinstance(value, type) and issubclass(value, ExplorationWrapper):
        return AMAGO_EXPLORATIONS.get(value) or ScriptExploration(value)
    return value


GIN_MODULE = "amago.envs.exploration"
"""The module AMAGO's two wrappers are gin configurables of (``amago.envs.exploration.EpsilonGreedy.x`` and
``EpsilonGreedy.x`` both name them)."""


def _register_with_gin() -> None:
    """Makes the two wrappers gin configurables under AMAGO's names when gin-config is installed (nothing else)."""
    try:
        import gin
    except ImportError:
        return
    for cls in (BilevelEpsilonGreedy, EpsilonGreedy):
        gin.configurable(cls.__name__, module=GIN_MODULE)(cls)


_register_with_gin()


__all__ = [
    "AMAGO_EXPLORATIONS",
    "GIN_MODULE",
    "BilevelEpsilonGreedy",
    "EpsilonGreedy",
    "ExplorationWrapper",
    "ScriptExploration",
    "exploration_for_experiment",
]
