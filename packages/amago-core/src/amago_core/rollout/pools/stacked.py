"""``StackedEnv``: several single ``AMAGOEnv``s presented as one batched env, for the in-process pool.

Stepping N small envs one ``AMAGOEnv.step`` at a time spends most of its time on tiny numpy arrays. Here the
action conversion, observation checks and timestep assembly happen once per batch, and only the envs' own
``inner_step``/``inner_reset`` run per row, so the pool costs little more than the envs themselves.

A row whose episode ends is reset inside the same ``step``: the returned timestep still holds the *final*
observation of that episode (what the trajectory file must end with), and :attr:`reset_timestep` holds the
next policy input, in which those rows show the new episode's first observation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

import numpy as np

from amago_core.data.timestep import Timestep
from amago_core.rollout.action_mask import ACTION_MASK_KEY, mask_of
from amago_core.rollout.env import AMAGOEnv, EnvContractError, check_finite, check_finite_obs


def _raise_named(exc: Exception, env: AMAGOEnv, row: int, call: str) -> NoReturn:
    # Imported here: the pools package imports this module while it is being set up.
    from amago_core.rollout.pools.base import raise_named

    raise_named(exc, row, env, call)


def _space_signature(env: AMAGOEnv) -> tuple:
    obs = tuple((k, shape, str(dtype)) for k, (shape, dtype) in env._obs.expected.items())
    # Whether the env gives an action mask is part of its spaces: the pool stores one for every row or none.
    return obs, type(env._act).__name__, env.action_dim, str(env.action_space), env.action_mask_width


class StackedEnv:
    """N batch-1 envs with identical spaces, stepped as one batch (see module docstring).

    Args:
        envs: ``AMAGOEnv``s with ``batched_envs == 1`` and the same observation and action spaces.
    """

    def __init__(self, envs: Sequence[AMAGOEnv]) -> None:
        if not envs:
            msg = "StackedEnv needs at least one env."
            raise ValueError(msg)
        if any(e.batched_envs != 1 for e in envs):
            msg = "StackedEnv stacks single envs; use the already_vectorized pool for batched ones."
            raise ValueError(msg)
        first = _space_signature(envs[0])
        for i, e in enumerate(envs[1:], start=1):
            if _space_signature(e) != first:
                msg = (
                    f"env {i} ({e.env_name!r}) has different spaces than env 0 ({envs[0].env_name!r}); every "
                    "actor must share observation and action spaces."
                )
                raise EnvContractError(msg)
        self.envs = list(envs)
        self.batched_envs = len(envs)
        head = envs[0]
        self._act = head._act
        self._keys = list(head._obs.expected)
        self._expected = head._obs.expected
        self.observation_space = head.observation_space
        self.action_space = head.action_space
        self.action_dim = head.action_dim
        self.action_dtype = head.action_dtype
        self.is_discrete = head.is_discrete
        self.is_multibinary = head.is_multibinary
        self.is_multidiscrete = head.is_multidiscrete
        self.step_count = np.zeros(self.batched_envs, dtype=np.int64)
        self.reset_timestep: Timestep | None = None
        """After :meth:`step`: the next policy input, with finished rows already reset."""
        self.step_env_names: list[str] = []
        """After :meth:`step`: each row's env name for the step just taken, read before finished rows were reset
        (a multi-task env may take another name at its reset; the finished episode's return, metrics and file
        belong to the name it ran under). Empty before the first step."""

    @property
    def env_name(self) -> str:
        """Name of the first row (every row's name is in :attr:`env_names`)."""
        return self.envs[0].env_name

    @property
    def env_names(self) -> list[str]:
        """Current name of every row."""
        return [e.env_name for e in self.envs]

    def _stack_obs(self, raw: list[Any], rows: Iterable[int]) -> dict[str, np.ndarray]:
        # Fast path: stack each key once and check the whole batch; only on a mismatch is every row checked
        # alone, so that the error names the env that broke the contract.
        out = {}
        is_dict = self.envs[0]._obs.is_dict
        try:
            for key in self._keys:
                shape, dtype = self._expected[key]
                arr = np.stack([np.asarray(o[key] if is_dict else o) for o in raw])
                if arr.shape[1:] != shape or not np.can_cast(arr.dtype, dtype, casting="same_kind"):
                    raise EnvContractError
                out[key] = arr if arr.dtype == dtype else arr.astype(dtype)
        except (EnvContractError, ValueError, KeyError, TypeError, IndexError):
            rows_obs = [self.envs[r]._obs(o, self.envs[r].env_name) for r, o in zip(rows, raw, strict=True)]
            out = {k: np.concatenate([o[k] for o in rows_obs]) for k in self._keys}
        return out

    def _with_masks(
        self, obs: dict[str, np.ndarray], raw: list[Any], infos: list[Any], rows: Iterable[int]
    ) -> dict[str, np.ndarray]:
        """``obs`` with each row's action mask under :data:`ACTION_MASK_KEY` (as is when the envs have none)."""
        if self.envs[0].action_mask is None:
            return obs
        masks = []
        for row, row_obs, info in zip(rows, raw, infos, strict=True):
            env = self.envs[row]
            spec = env.action_mask
            # Every row shares the spaces: a mask key in one but not another is a contract bug.
            if spec is None:
                msg = f"env {env.env_name!r} (actor {row}) names no action mask, but actor 0 does; give every actor one."
                raise EnvContractError(msg)
            masks.append(
                mask_of(
                    spec,
                    row_obs,
                    info,
                    1,
                    env.action_mask_width,
                    env_name=env.env_name,
                    segments=env.action_mask_segments,
                )
            )
        obs[ACTION_MASK_KEY] = np.concatenate(masks)
        return obs

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Timestep, list]:
        """Resets every row (row i seeded with ``seed + i`` when a seed is given)."""
        n = self.batched_envs
        raw, infos = [], []
        i = 0
        try:
            for i, e in enumerate(self.envs):
                obs, info = e.inner_reset(seed=None if seed is None else seed + i, options=options)
                raw.append(obs)
                infos.append(info)
        except Exception as exc:
            _raise_named(exc, self.envs[i], i, "reset")
        self.step_count = np.zeros(n, dtype=np.int64)
        obs = check_finite_obs(self._stack_obs(raw, range(n)), self.env_names, self.step_count, batched=True)
        timestep = Timestep(
            obs=self._with_masks(obs, raw, infos, range(n)),
            prev_action=np.zeros((n, self.action_dim), dtype=self.action_dtype),
            reward=np.zeros(n, dtype=np.float32),
            time_idx=np.zeros(n, dtype=np.int64),
            terminal=np.zeros(n, dtype=bool),
        )
        self.reset_timestep = timestep
        return timestep, infos

    def step(self, action: Any) -> tuple[Timestep, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Steps every row; finished rows are reset at once (see :attr:`reset_timestep`).

        Returns:
            ``(timestep, reward, terminated, truncated, infos)``: the timestep holds each row's new observation
            (the final one for finished rows); ``infos`` has one dict per row.
        """
        n = self.batched_envs
        stored = self._act.to_stored(action, n)
        env_actions = self._act.to_env(stored, batched=True)
        if isinstance(env_actions, np.ndarray) and env_actions.ndim == 1:
            env_actions = env_actions.tolist()  # plain ints, as a single gymnasium env expects
        raw, rewards, terms, truncs, infos = [], [], [], [], []
        i = 0
        try:  # one try around the loop: free unless an env raises, then ``i`` names it
            for i, (e, a) in enumerate(zip(self.envs, env_actions, strict=True)):  # noqa: B007 (read below)
                obs, r, te, tr, info = e.inner_step(a)
                raw.append(obs)
                rewards.append(r)
                terms.append(te)
                truncs.append(tr)
                infos.append(info)
        except Exception as exc:
            _raise_named(exc, self.envs[i], i, "step")
        try:
            reward = np.asarray(rewards, dtype=np.float32).reshape(n)
            terminated = np.asarray(terms, dtype=bool).reshape(n)
            truncated = np.asarray(truncs, dtype=bool).reshape(n)
        except (ValueError, TypeError) as exc:
            msg = (
                f"envs {self.env_names} must return one scalar reward/terminated/truncated per step ({exc})."
            )
            raise EnvContractError(msg) from exc
        self.step_count += 1
        names = self.step_env_names = self.env_names  # once per step, before any row resets
        check_finite(reward, "reward", names, self.step_count, batched=True)
        timestep = Timestep(
            obs=self._with_masks(
                check_finite_obs(self._stack_obs(raw, range(n)), names, self.step_count, batched=True),
                raw,
                infos,
                range(n),
            ),
            prev_action=stored,
            reward=reward.copy(),
            time_idx=self.step_count.copy(),
            terminal=terminated.copy(),
        )
        done = terminated | truncated
        if done.any():
            rows = np.flatnonzero(done)
            reset_raw, reset_infos = [], []
            for r in rows:
                try:
                    row_obs, row_info = self.envs[r].inner_reset()
                except Exception as exc:
                    _raise_named(exc, self.envs[r], int(r), "reset (after its episode ended)")
                reset_raw.append(row_obs)
                reset_infos.append(row_info)
            next_ts = timestep.reset_version(rows)
            new_names = [self.envs[r].env_name for r in rows]
            fresh = self._with_masks(
                check_finite_obs(
                    self._stack_obs(reset_raw, rows), new_names, np.zeros(len(rows), np.int64), batched=True
                ),
                reset_raw,
                reset_infos,
                rows,
            )
            for key in fresh:
                next_ts.obs[key][rows] = fresh[key]
            self.step_count[rows] = 0
            self.reset_timestep = next_ts
        else:
            self.reset_timestep = timestep
        return timestep, reward, terminated, truncated, infos

    def close(self) -> None:
        """Closes every env."""
        for e in self.envs:
            e.close()
