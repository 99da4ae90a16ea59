"""Combination lock: remember a code seen once and set every dial at once, the MultiDiscrete-action demo.

A lock has ``dials`` dials of ``symbols`` positions each. Every ``reset`` draws a secret code (one symbol per
dial). The first observation shows it; every later one hides it, so a policy that opens the lock at once must
remember it. Each step is one attempt that sets all dials: ``MultiDiscrete([symbols] * dials)``, or the flattened
baseline ``Discrete(symbols ** dials)`` (see :func:`decode_action` for the order). The observation also says
which dials the previous attempt got right, so a policy without the code can still search for it.

Rewards: a closed attempt pays the fraction of dials it set right (``reward="per_dial"``) or nothing
(``"sparse"``). The attempt that opens the lock ends the episode (``terminated``) and pays 1 for its own step
plus 1 for each step left in the horizon, as if the open lock paid 1 per step until then. Without that, a
policy paid per dial could earn more by keeping all but one dial right for the whole horizon than by opening
the lock; with it, the return is ``horizon`` minus the fractions of dials left wrong before opening, so opening
sooner is always better. The best return is ``horizon`` (the code entered on the first step). After ``horizon``
closed attempts the episode is truncated.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX
from amago_envs.suites.actions import is_discrete_action
from amago_envs.suites.specs import COMBINATION_LOCK_MAX_FLAT_ACTIONS, CombinationLockConfig
from amago_envs.suites.suite import BuiltinSuite

OPENED_METRIC = f"{AMAGO_ENV_LOG_PREFIX} opened"
"""The env metric logged at each episode's end: 1.0 if the lock opened, else 0.0."""

STEPS_METRIC = f"{AMAGO_ENV_LOG_PREFIX} steps"
"""The env metric logged at each episode's end: the attempts it took (the opening one, or ``horizon``)."""

REWARDS: tuple[str, ...] = ("per_dial", "sparse")
ACTION_FORMATS: tuple[str, ...] = ("multidiscrete", "discrete")


def decode_action(index: int, dials: int, symbols: int) -> np.ndarray:
    """The dial settings of flat action ``index``: its digits in base ``symbols``, dial 0 the most significant.

    Row-major order (``np.unravel_index`` over ``(symbols,) * dials``), so with 3 dials of 4 symbols index 6 is
    dials ``[0, 1, 2]`` and index 63 is ``[3, 3, 3]``.
    """
    return np.array(np.unravel_index(int(index), (symbols,) * dials), dtype=np.int64)


def encode_action(settings: Any, symbols: int) -> int:
    """The flat action index of per-dial ``settings``: the inverse of :func:`decode_action`."""
    digits = np.asarray(settings, dtype=np.int64)
    return int(np.ravel_multi_index(tuple(digits), (symbols,) * len(digits)))


class CombinationLock(gymnasium.Env[np.ndarray, Any]):
    """See the module docstring.

    Observation (flat ``Box(0, 1, (dials * symbols + dials,), float32)``): the code as one one-hot of
    ``symbols`` per dial (dial 0 first), shown at the first step and zeros after it, then the previous
    attempt's per-dial correctness (1 right, 0 wrong; zeros at the first step).

    Args:
        dials: dials on the lock (at least 2).
        symbols: positions of each dial (at least 2).
        horizon: attempts before the episode is truncated (at least 1).
        reward: ``"per_dial"`` (a closed attempt pays the fraction of dials right) or ``"sparse"`` (it pays 0).
        action_format: ``"multidiscrete"`` (one integer per dial) or ``"discrete"`` (one flat index, decoded by
            :func:`decode_action`; at most 4096 combinations).

    Raises:
        ValueError: an option out of range, in one line that says the allowed values.
    """

    def __init__(
        self,
        dials: int = 3,
        symbols: int = 4,
        horizon: int = 10,
        reward: str = "per_dial",
        action_format: str = "multidiscrete",
    ) -> None:
        if dials < 2 or symbols < 2 or horizon < 1:
            msg = f"need dials >= 2, symbols >= 2 and horizon >= 1; got dials={dials}, symbols={symbols}, horizon={horizon}."
            raise ValueError(msg)
        if reward not in REWARDS:
            msg = f"reward must be one of {', '.join(map(repr, REWARDS))}; got {reward!r}."
            raise ValueError(msg)
        if action_format not in ACTION_FORMATS:
            msg = (
                f"action_format must be one of {', '.join(map(repr, ACTION_FORMATS))}; got {action_format!r}."
            )
            raise ValueError(msg)
        combinations = symbols**dials
        if action_format == "discrete" and combinations > COMBINATION_LOCK_MAX_FLAT_ACTIONS:
            msg = (
                f"action_format='discrete' with {dials} dials of {symbols} symbols has {combinations} actions, "
                f"over {COMBINATION_LOCK_MAX_FLAT_ACTIONS}; use action_format='multidiscrete' or fewer dials."
            )
            raise ValueError(msg)
        self.dials = dials
        self.symbols = symbols
        self.horizon = horizon
        self.reward = reward
        self.action_format = action_format
        self.action_space: gymnasium.spaces.Space[Any] = (
            gymnasium.spaces.MultiDiscrete([symbols] * dials)
            if action_format == "multidiscrete"
            else gymnasium.spaces.Discrete(combinations)
        )
        self.observation_space = gymnasium.spaces.Box(0.0, 1.0, (dials * symbols + dials,), np.float32)
        self.code = np.zeros(dials, dtype=np.int64)
        self.t: int | None = None  # None until the first reset, and again once an episode ends
        self.opened = False

    def _settings(self, action: Any) -> np.ndarray:
        """The per-dial settings an action asks for; a malformed action is refused before it moves a dial."""
        if self.action_format == "discrete":
            if not is_discrete_action(action, self.symbols**self.dials):
                msg = f"flat combination-lock actions are integers 0..{self.symbols**self.dials - 1}; got {action!r}."
                raise ValueError(msg)
            return decode_action(int(action), self.dials, self.symbols)
        settings = np.asarray(action)
        if (
            settings.shape != (self.dials,)
            or settings.dtype.kind not in "iu"
            or (settings < 0).any()
            or (settings >= self.symbols).any()
        ):
            msg = (
                f"combination-lock actions are {self.dials} integers (one per dial) in 0..{self.symbols - 1}; "
                f"got {action!r}."
            )
            raise ValueError(msg)
        return settings.astype(np.int64)

    def _observe(self, right: np.ndarray, show_code: bool) -> np.ndarray:
        obs = np.zeros(self.dials * self.symbols + self.dials, dtype=np.float32)
        if show_code:
            obs[np.arange(self.dials) * self.symbols + self.code] = 1.0
        obs[self.dials * self.symbols :] = right
        return obs

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draws a new code and shows it (this is the only observation that does)."""
        super().reset(seed=seed)
        self.code = self.np_random.integers(0, self.symbols, size=self.dials)
        self.t = 0
        self.opened = False
        return self._observe(np.zeros(self.dials, np.float32), show_code=True), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """One attempt: sets every dial, pays (see the module docstring) and reports which dials were right."""
        if self.t is None:
            msg = "the combination-lock episode is over (or never started); call reset() before step()."
            raise RuntimeError(msg)
        right = (self._settings(action) == self.code).astype(np.float32)
        self.t += 1
        self.opened = bool(right.all())
        if self.opened:
            # The open lock pays 1 now and 1 for each step left: opening sooner always beats partial credit.
            reward = float(self.horizon - self.t + 1)
        else:
            reward = float(right.mean()) if self.reward == "per_dial" else 0.0
        truncated = not self.opened and self.t >= self.horizon
        info: dict[str, Any] = {}
        if self.opened or truncated:
            info[OPENED_METRIC] = float(self.opened)
            info[STEPS_METRIC] = float(self.t)
            self.t = None
        return self._observe(right, show_code=False), reward, self.opened, truncated, info


class CombinationLockSuite(BuiltinSuite):
    """The ``combination_lock`` env suite (env id ``combination-lock``)."""

    config_type = CombinationLockConfig
    config: CombinationLockConfig

    @property
    def env_name(self) -> str:
        """``CombinationLock-{dials}x{symbols}-H{horizon}``, with ``-Flat`` (discrete) and ``-Sparse`` suffixes."""
        cfg = self.config
        name = f"CombinationLock-{cfg.dials}x{cfg.symbols}-H{cfg.horizon}"
        if cfg.action_format == "discrete":
            name += "-Flat"
        if cfg.reward == "sparse":
            name += "-Sparse"
        return name

    def make_gym_env(self) -> CombinationLock:
        """A fresh lock with this suite's options."""
        cfg = self.config
        return CombinationLock(
            dials=cfg.dials,
            symbols=cfg.symbols,
            horizon=cfg.horizon,
            reward=cfg.reward,
            action_format=cfg.action_format,
        )
