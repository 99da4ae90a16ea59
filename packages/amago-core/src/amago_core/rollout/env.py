"""``AMAGOEnv``: wraps any gymnasium 1.x env so that it speaks in batched ``Timestep``s.

- observations become a dict (``{"observation": obs}`` for non-dict spaces) with a leading batch dim, checked
  against the observation space so that a wrong shape or dtype fails here, naming the env and key;
- actions arrive in the policy's representation (an index for Discrete, 0/1 for MultiBinary, [-1, 1] for Box)
  and are translated for the env; the *received* action is stored as the next timestep's previous action, so
  exploration noise applied before this wrapper is part of the data;
- the time index counts steps since the episode started, per env row. Meta-RL envs that reset themselves
  inside one rollout work unchanged: this wrapper never looks inside an episode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from amago_core.data.timestep import Timestep
from amago_core.rollout.action_mask import (
    ACTION_MASK_KEY,
    ActionMaskSpec,
    MaskSource,
    encoder_space,
    mask_of,
    mask_segments,
    mask_space,
    mask_width,
    read_mask,
)

AMAGO_ENV_LOG_PREFIX = "AMAGO_LOG_METRIC"
"""Info keys that start with this string are logged as per-env-name metrics (prefix removed)."""

DEFAULT_OBS_KEY = "observation"
"""The dict key a non-dict observation is stored under."""


class NonFiniteEnvDataError(ValueError):
    """An env returned a NaN or infinite reward or observation; nothing of that step was stored."""


class EnvContractError(ValueError):
    """An env returned something that breaks the AMAGOEnv contract (wrong obs shape/dtype, bad action...)."""


def _batch_dim_array(value: Any, dtype: npt.DTypeLike, n: int, what: str, env_name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=dtype)
    if arr.size != n:
        msg = f"env {env_name!r} returned {what} with {arr.size} values; expected one per env ({n})."
        raise EnvContractError(msg)
    return arr.reshape(n)


def check_finite(
    value: np.ndarray, what: str, env_names: Sequence[str], step_count: np.ndarray, *, batched: bool
) -> None:
    """Refuses NaN/inf where it enters, before it reaches a trajectory file (and, later, every parameter).

    Args:
        value: a ``(rows, ...)`` reward or observation array (non-float arrays always pass).
        what: ``"reward"`` or ``"observation 'key'"``, for the message.
        batched: name the row in the message.

    Raises:
        NonFiniteEnvDataError: one line naming the env, the value, the step and what to do.
    """
    if value.dtype.kind != "f" or np.isfinite(value).all():
        return
    rows = value.reshape(len(value), -1)
    row = int(np.flatnonzero(~np.isfinite(rows).all(axis=1))[0])
    shown = rows[row][~np.isfinite(rows[row])][0]
    msg = (
        f"env {env_names[row]!r} returned a non-finite {what} ({shown}) at step {int(step_count[row])} of an "
        f"episode{f' (row {row})' if batched else ''}; nothing of that step was stored. Fix the env, or wrap it to "
        "replace non-finite values (np.nan_to_num) or end the episode there."
    )
    raise NonFiniteEnvDataError(msg)


def check_finite_obs(
    obs: dict[str, np.ndarray], env_names: Sequence[str], step_count: np.ndarray, *, batched: bool
) -> dict[str, np.ndarray]:
    """:func:`check_finite` on every key of a batched observation dict; returns the dict unchanged."""
    for key, value in obs.items():
        check_finite(value, f"observation {key!r}", env_names, step_count, batched=batched)
    return obs


class ObsChecker:
    """Converts one observation (or a batch) to a dict of batched arrays, checking shape and dtype."""

    def __init__(self, space: gym.Space, batched_envs: int) -> None:
        self.is_dict = isinstance(space, gym.spaces.Dict)
        subspaces = dict(space.spaces) if isinstance(space, gym.spaces.Dict) else {DEFAULT_OBS_KEY: space}
        self.expected: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
        for key, sub in subspaces.items():
            if not isinstance(
                sub, gym.spaces.Box | gym.spaces.Discrete | gym.spaces.MultiBinary | gym.spaces.MultiDiscrete
            ):
                msg = (
                    f"observation key {key!r} has a {type(sub).__name__} space; AMAGOEnv supports Box, Discrete, "
                    "MultiBinary and MultiDiscrete entries. Flatten or split it into a Dict of those."
                )
                raise EnvContractError(msg)
            # gymnasium types ``Space.shape`` as Optional; these four space types always set one.
            shape = sub.shape
            if shape is None:
                msg = f"observation key {key!r} has a {type(sub).__name__} space without a shape."
                raise EnvContractError(msg)
            self.expected[key] = (tuple(shape), np.dtype(sub.dtype))
        self.space = gym.spaces.Dict(subspaces)
        self.batched_envs = batched_envs

    def __call__(self, obs: Any, env_name: str) -> dict[str, np.ndarray]:
        if self.is_dict:
            if not isinstance(obs, Mapping):
                msg = f"env {env_name!r} has a Dict observation space but returned a {type(obs).__name__}."
                raise EnvContractError(msg)
            missing = set(self.expected) - set(obs)
            if missing:
                msg = f"env {env_name!r} returned an observation without key(s) {sorted(missing)}."
                raise EnvContractError(msg)
            items: Iterable[tuple[str, Any]] = ((k, obs[k]) for k in self.expected)
        else:
            items = ((DEFAULT_OBS_KEY, obs),)
        out = {}
        batched = self.batched_envs > 1
        for key, value in items:
            shape, dtype = self.expected[key]
            arr = np.asarray(value)
            want = (self.batched_envs, *shape) if batched else shape
            if arr.shape != want:
                msg = (
                    f"env {env_name!r} returned observation key {key!r} with shape {arr.shape}; its space says "
                    f"{want}. Fix the env or its observation_space."
                )
                raise EnvContractError(msg)
            if arr.dtype != dtype:
                # float64 from a float32 space is everyday gymnasium behaviour; a float image for a uint8 space
                # (or a string, or an object array) is a bug worth stopping for.
                if not np.can_cast(arr.dtype, dtype, casting="same_kind"):
                    msg = (
                        f"env {env_name!r} returned observation key {key!r} as {arr.dtype}; its space says "
                        f"{dtype}. Fix the env or its observation_space."
                    )
                    raise EnvContractError(msg)
                arr = arr.astype(dtype)
            elif arr is value or arr.base is not None:
                # Envs may hand back (a view of) a buffer they overwrite on the next step; timesteps are kept by
                # reference in trajectories, so they must own their data.
                arr = arr.copy()
            out[key] = arr if batched else arr[None]
        return out


class ActionAdapter:
    """Translates policy actions to env actions and to the stored ``prev_action`` representation."""

    dim: int
    stored_dtype: np.dtype = np.dtype(np.uint8)
    policy_space: gym.Space

    def to_stored(self, action: np.ndarray, n: int) -> np.ndarray:
        raise NotImplementedError

    def to_env(self, stored: np.ndarray, batched: bool) -> Any:
        raise NotImplementedError


class _DiscreteAdapter(ActionAdapter):
    def __init__(self, space: gym.spaces.Discrete) -> None:
        self.n = int(space.n)
        self.start = int(space.start)
        self.dim = self.n
        self.policy_space = gym.spaces.Discrete(self.n)
        self._eye = np.eye(self.n, dtype=np.uint8)

    def indices(self, action: Any, n: int) -> np.ndarray:
        arr = np.asarray(action)
        if arr.size != n or not np.issubdtype(arr.dtype, np.integer):
            msg = (
                f"a Discrete action must be {n} integer index(es) (shape (), ({n},) or ({n}, 1)); "
                f"got shape {arr.shape} dtype {arr.dtype}."
            )
            raise EnvContractError(msg)
        idx = arr.reshape(n).astype(np.int64)
        if idx.min() < 0 or idx.max() >= self.n:
            msg = f"Discrete action index out of range [0, {self.n}): {idx.tolist()}."
            raise EnvContractError(msg)
        return idx

    def to_stored(self, action: Any, n: int) -> np.ndarray:
        return self._eye[self.indices(action, n)]

    def to_env(self, stored: np.ndarray, batched: bool) -> Any:
        idx = stored.argmax(axis=1) + self.start
        return idx if batched else int(idx[0])


class _MultiBinaryAdapter(ActionAdapter):
    def __init__(self, space: gym.spaces.MultiBinary) -> None:
        if len(space.shape) != 1:
            msg = f"MultiBinary actions must be 1-D; got shape {space.shape}."
            raise EnvContractError(msg)
        self.dim = int(space.shape[0])
        self.policy_space = space

    def to_stored(self, action: Any, n: int) -> np.ndarray:
        arr = np.asarray(action)
        if arr.size != n * self.dim:
            msg = f"a MultiBinary action must have shape ({n}, {self.dim}); got {arr.shape}."
            raise EnvContractError(msg)
        arr = arr.reshape(n, self.dim)
        if not np.isin(arr, (0, 1)).all():
            msg = f"MultiBinary actions must be 0 or 1; got {arr.tolist()}."
            raise EnvContractError(msg)
        return arr.astype(np.uint8)

    def to_env(self, stored: np.ndarray, batched: bool) -> Any:
        out = stored.astype(np.int8)
        return out if batched else out[0]


class _MultiDiscreteAdapter(ActionAdapter):
    """Several discrete choices at once: stored as their one-hots one after the other (``sum(nvec)`` wide)."""

    def __init__(self, space: gym.spaces.MultiDiscrete) -> None:
        nvec = np.asarray(space.nvec)
        if nvec.ndim != 1:
            msg = f"MultiDiscrete actions must be 1-D; got nvec of shape {nvec.shape}. Flatten the action space."
            raise EnvContractError(msg)
        self.nvec = nvec.astype(np.int64)
        self.start = np.asarray(space.start, dtype=np.int64).reshape(-1)
        self.env_dtype = space.dtype
        self.dim = int(self.nvec.sum())
        self.offsets = np.concatenate(([0], np.cumsum(self.nvec)[:-1]))
        """Where each dimension's one-hot begins in the stored vector."""
        self.policy_space = gym.spaces.MultiDiscrete(self.nvec)

    def indices(self, action: Any, n: int) -> np.ndarray:
        arr = np.asarray(action)
        dims = len(self.nvec)
        if arr.size != n * dims or not np.issubdtype(arr.dtype, np.integer):
            msg = f"a MultiDiscrete action must be ({n}, {dims}) integer indices; got shape {arr.shape} dtype {arr.dtype}."
            raise EnvContractError(msg)
        idx = arr.reshape(n, dims).astype(np.int64)
        if (idx < 0).any() or (idx >= self.nvec).any():
            msg = f"MultiDiscrete action index out of range [0, {self.nvec.tolist()}): {idx.tolist()}."
            raise EnvContractError(msg)
        return idx

    def to_stored(self, action: Any, n: int) -> np.ndarray:
        stored = np.zeros((n, self.dim), dtype=np.uint8)
        rows = np.arange(n)[:, None]
        stored[rows, self.offsets + self.indices(action, n)] = 1
        return stored

    def to_env(self, stored: np.ndarray, batched: bool) -> Any:
        idx = np.stack(
            [stored[:, o : o + k].argmax(axis=1) for o, k in zip(self.offsets, self.nvec, strict=True)],
            axis=1,
        )
        out = (idx + self.start).astype(self.env_dtype)
        return out if batched else out[0]


class _BoxAdapter(ActionAdapter):
    def __init__(self, space: gym.spaces.Box) -> None:
        if len(space.shape) != 1:
            msg = f"Box actions must be 1-D; got shape {space.shape}. Flatten the action space."
            raise EnvContractError(msg)
        if not (np.isfinite(space.low).all() and np.isfinite(space.high).all()):
            msg = "Box actions need finite bounds: the policy acts in [-1, 1] and is rescaled to [low, high]."
            raise EnvContractError(msg)
        self.dim = int(space.shape[0])
        self.low = space.low.astype(np.float64)
        self.high = space.high.astype(np.float64)
        self.env_dtype = space.dtype
        self.stored_dtype = np.dtype(np.float32)
        self.policy_space = gym.spaces.Box(-1.0, 1.0, shape=(self.dim,), dtype=np.float32)

    def to_stored(self, action: Any, n: int) -> np.ndarray:
        arr = np.asarray(action, dtype=np.float32)
        if arr.size != n * self.dim:
            msg = f"a Box action must have shape ({n}, {self.dim}); got {arr.shape}."
            raise EnvContractError(msg)
        arr = arr.reshape(n, self.dim)
        # A policy outside [-1, 1] is a bug upstream (a missing tanh, noise added without clipping); clipping it
        # here would hide that, so it fails loudly with a little tolerance for float error.
        if not np.all(np.abs(arr) <= 1.0 + 1e-5):
            msg = f"Box actions must be in [-1, 1] (AMAGOEnv rescales them to the env's bounds); got {arr.tolist()}."
            raise EnvContractError(msg)
        return np.clip(arr, -1.0, 1.0)

    def to_env(self, stored: np.ndarray, batched: bool) -> Any:
        scaled = (self.low + (stored.astype(np.float64) + 1.0) * 0.5 * (self.high - self.low)).astype(
            self.env_dtype
        )
        return scaled if batched else scaled[0]


def make_action_adapter(space: gym.Space) -> ActionAdapter:
    """The adapter between ``space``'s env actions, the policy's actions and the stored ``prev_action``."""
    if isinstance(space, gym.spaces.Discrete):
        return _DiscreteAdapter(space)
    if isinstance(space, gym.spaces.MultiBinary):
        return _MultiBinaryAdapter(space)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return _MultiDiscreteAdapter(space)
    if isinstance(space, gym.spaces.Box):
        return _BoxAdapter(space)
    msg = f"AMAGOEnv supports Discrete, MultiDiscrete, Box and MultiBinary action spaces; got {type(space).__name__}."
    raise EnvContractError(msg)


class AMAGOEnv:
    """A gymnasium env (or an already-vectorised batch of envs) that returns ``Timestep``s.

    Args:
        env: a gymnasium 1.x env. With ``batched_envs > 1`` it is already vectorised: it takes a batch of
            actions, returns arrays with a leading dim of ``batched_envs``, and resets finished rows itself
            (returning the new episode's first observation on the done step). Its ``single_observation_space``
            / ``single_action_space`` (or, failing that, its plain spaces) describe one row.
        env_name: name used for logging and trajectory file names. None reads ``env.env_name`` at every call,
            which lets multi-task envs rename themselves per reset; subclasses may override the property.
        batched_envs: number of rows the env steps at once (1 for a plain env).
        action_mask_key: the key of the env's action mask (which actions it allows now: one boolean per action,
            True for allowed; for MultiDiscrete, the dimensions' entries one after the other), or None for an env
            without one. The mask is checked at every reset and step, and stored in the observation dict under
            ``"action_mask"``; agents keep the policy on allowed actions.
        action_mask_from: ``"obs"``: the key is a key of the env's Dict observation (taken out of the
            observation the encoder sees); ``"info"``: a key of the ``info`` dict ``reset`` and ``step`` return.

    Attributes:
        observation_space: a ``Dict`` describing one row's observation.
        action_space: the policy-facing action space (Box actions become ``Box(-1, 1)``).
        action_dim: width ``A`` of the stored previous action (the number of choices for Discrete).
        step_count: ``(batched_envs,)`` int64 steps since each row's episode started.
    """

    def __init__(
        self,
        env: gym.Env,
        env_name: str | None = None,
        batched_envs: int = 1,
        *,
        action_mask_key: str | None = None,
        action_mask_from: MaskSource = "obs",
    ) -> None:
        if int(batched_envs) < 1:
            msg = f"batched_envs must be >= 1; got {batched_envs}."
            raise ValueError(msg)
        self.env = env
        self.batched_envs = int(batched_envs)
        self._env_name = env_name
        batched = self.batched_envs > 1
        obs_space = getattr(env, "single_observation_space", None) if batched else None
        act_space = getattr(env, "single_action_space", None) if batched else None
        self.action_mask: ActionMaskSpec | None = (
            ActionMaskSpec(action_mask_key, action_mask_from) if action_mask_key is not None else None
        )
        """Where the env's action mask comes from (None: the env has none)."""
        seen = encoder_space(
            obs_space or env.observation_space, self.action_mask, env_name or type(env).__name__
        )
        self._obs = ObsChecker(seen, self.batched_envs)
        # Vectorised envs report a finished row's last observation separately (gymnasium's `final_obs`), checked
        # as a single row; a plain env's own checker already checks one row.
        self._row_obs = ObsChecker(seen, 1) if batched else self._obs
        if batched:
            mode = getattr(env, "metadata", {}).get("autoreset_mode")
            if mode is not None and str(getattr(mode, "value", mode)) != "SameStep":
                msg = (
                    f"vectorised env {env_name!r} uses autoreset_mode={mode}; amago needs finished rows reset in "
                    "the same step. Build it with autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP."
                )
                raise EnvContractError(msg)
        self.reset_timestep: Timestep | None = None
        """Vectorised envs that report ``final_obs``: the next policy input after a step that ended episodes
        (the step's own timestep then holds the final observations). None otherwise."""
        self._act = make_action_adapter(act_space or env.action_space)
        self.observation_space: gym.spaces.Dict = self._obs.space
        self.action_mask_width = 0
        """Entries of the action mask (0: the env has none)."""
        self.action_mask_segments: list[int] | None = None
        """The mask's entries per action dimension (None: the env has no mask)."""
        if self.action_mask is not None:
            self.action_mask_width = mask_width(self._act.policy_space, str(env_name or type(env).__name__))
            self.action_mask_segments = mask_segments(self._act.policy_space)
            self.observation_space = gym.spaces.Dict(
                {**self._obs.space.spaces, ACTION_MASK_KEY: mask_space(self.action_mask_width)}
            )
        self.action_space: gym.Space = self._act.policy_space
        self.action_dim: int = self._act.dim
        self.action_dtype: np.dtype = self._act.stored_dtype
        self.step_count = np.zeros(self.batched_envs, dtype=np.int64)

    @property
    def env_name(self) -> str:
        """The current env name ('/' written as '_'); may change between resets for multi-task envs."""
        name = self._env_name
        if name is None:
            # gymnasium 1.x wrappers no longer forward attributes, so look at the unwrapped env too.
            name = getattr(self.env, "env_name", None) or getattr(self.env.unwrapped, "env_name", None)
        if not name:
            msg = (
                "AMAGOEnv needs an env_name for logging and file names: pass AMAGOEnv(env, env_name=...), give "
                "the env an `env_name` attribute, or override the property."
            )
            raise ValueError(msg)
        return str(name).replace("/", "_")

    @property
    def env_names(self) -> list[str]:
        """The name of every row (one env, so the same name ``batched_envs`` times)."""
        return [self.env_name] * self.batched_envs

    @property
    def step_env_names(self) -> list[str]:
        """Each row's name for the step just taken: :attr:`env_names`, since this env resets only when asked,
        after the step is recorded (a pool that resets rows inside its step keeps the names from before)."""
        return self.env_names

    @property
    def is_discrete(self) -> bool:
        """True for Discrete action spaces (stored as one-hot)."""
        return isinstance(self._act, _DiscreteAdapter)

    @property
    def is_multibinary(self) -> bool:
        """True for MultiBinary action spaces."""
        return isinstance(self._act, _MultiBinaryAdapter)

    @property
    def is_multidiscrete(self) -> bool:
        """True for MultiDiscrete action spaces (stored as one one-hot per dimension)."""
        return isinstance(self._act, _MultiDiscreteAdapter)

    def _with_mask(self, obs: dict[str, np.ndarray], raw_obs: Any, info: Any) -> dict[str, np.ndarray]:
        """``obs`` with the env's mask added under :data:`ACTION_MASK_KEY` (as is, for an env without one)."""
        if self.action_mask is not None:
            obs[ACTION_MASK_KEY] = mask_of(
                self.action_mask,
                raw_obs,
                info,
                self.batched_envs,
                self.action_mask_width,
                env_name=self.env_name,
                segments=self.action_mask_segments,
            )
        return obs

    def inner_reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Resets the wrapped env (override to customise; return ``(obs, info)``)."""
        return self.env.reset(seed=seed, options=options)

    def inner_step(self, action: Any) -> tuple[Any, Any, Any, Any, dict]:
        """Steps the wrapped env with an env-format action (override to customise)."""
        return self.env.step(action)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Timestep, dict]:
        """Starts a new episode in every row.

        Returns:
            ``(timestep, info)``: time index 0, zero previous action and reward, not terminal.
        """
        obs, info = self.inner_reset(seed=seed, options=options)
        n = self.batched_envs
        self.step_count = np.zeros(n, dtype=np.int64)
        checked_obs = check_finite_obs(
            self._obs(obs, self.env_name), self._row_names, self.step_count, batched=n > 1
        )
        timestep = Timestep(
            obs=self._with_mask(checked_obs, obs, info),
            prev_action=np.zeros((n, self.action_dim), dtype=self.action_dtype),
            reward=np.zeros(n, dtype=np.float32),
            time_idx=np.zeros(n, dtype=np.int64),
            terminal=np.zeros(n, dtype=bool),
        )
        return timestep, info

    def step(self, action: Any) -> tuple[Timestep, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Takes one step in every row.

        Args:
            action: the policy's action: integer indices (Discrete), 0/1 vectors (MultiBinary) or values in
                [-1, 1] (Box); with or without the batch dim when ``batched_envs == 1``.

        Returns:
            ``(timestep, reward, terminated, truncated, info)`` with ``(batched_envs,)`` arrays. The timestep
            stores the received action as ``prev_action`` and ``terminal = terminated``. For an
            already-vectorised env, rows that finished hold the env's auto-reset observation and their
            ``step_count`` is back to 0.
        """
        n = self.batched_envs
        stored = self._act.to_stored(action, n)
        obs, reward, terminated, truncated, info = self.inner_step(self._act.to_env(stored, n > 1))
        name = self.env_name
        reward = _batch_dim_array(reward, np.float32, n, "reward", name)
        terminated = _batch_dim_array(terminated, bool, n, "terminated", name)
        truncated = _batch_dim_array(truncated, bool, n, "truncated", name)
        self.step_count = self.step_count + 1
        checked_obs = self._obs(obs, name)
        check_finite(reward, "reward", self._row_names, self.step_count, batched=n > 1)
        check_finite_obs(checked_obs, self._row_names, self.step_count, batched=n > 1)
        timestep = Timestep(
            obs=self._with_mask(checked_obs, obs, info),
            prev_action=stored,
            reward=reward.copy(),
            time_idx=self.step_count.copy(),
            terminal=terminated.copy(),
        )
        if n > 1:
            # Vectorised envs reset finished rows themselves; their next step is step 1 of a new episode.
            done = terminated | truncated
            self.step_count[done] = 0
            timestep = self._split_final_obs(timestep, done, info, name)
        return timestep, reward, terminated, truncated, info

    @property
    def _row_names(self) -> list[str]:
        return [self.env_name] * self.batched_envs

    def _split_final_obs(self, timestep: Timestep, done: np.ndarray, info: Any, name: str) -> Timestep:
        # gymnasium's SAME_STEP vector envs return the new episode's first obs and put the finished episode's
        # last obs in info["final_obs"]. The file must end with the latter, the policy must see the former.
        self.reset_timestep = None
        final = info.get("final_obs") if isinstance(info, Mapping) else None
        if final is None or not done.any():
            return timestep
        self.reset_timestep = timestep.reset_version(np.flatnonzero(done))
        has_final = np.asarray(info.get("_final_obs", done), dtype=bool)
        stepped = timestep.copy()
        for row in np.flatnonzero(done & has_final):
            row_obs = self._row_obs(final[row], name)
            for key, value in row_obs.items():
                stepped.obs[key][row] = value[0]
            if self.action_mask is not None and self.action_mask.where == "obs":
                # The finished episode's last mask (an info mask of it is gone: the new episode's stays).
                stepped.obs[ACTION_MASK_KEY][row] = read_mask(
                    np.asarray(final[row][self.action_mask.key]),
                    1,
                    self.action_mask_width,
                    env_name=name,
                    spec=self.action_mask,
                    batched=False,
                    segments=self.action_mask_segments,
                )[0]
        return stepped

    def render(self) -> Any:
        """Renders the wrapped env."""
        return self.env.render()

    def close(self) -> None:
        """Closes the wrapped env."""
        self.env.close()

    def __repr__(self) -> str:
        return f"AMAGOEnv({self.env!r}, batched_envs={self.batched_envs})"
