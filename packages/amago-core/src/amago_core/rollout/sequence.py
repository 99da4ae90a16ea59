"""``SequenceEnv``: the outermost per-process env layer; it keeps the policy's view consistent across resets.

- a row whose episode ends (``terminated or truncated``) is reset *in the same step*: the next policy input is
  the new episode's first observation (time index 0, zero previous action and reward). A plain env is reset
  here; an already-vectorised env has reset itself, and its timestep is rewritten as an episode start;
- every step is recorded by a :class:`~amago_core.data.writer.TrajectoryWriter` (files end at episode ends);
- episode returns and ``AMAGO_LOG_METRIC`` info values are kept per env name (the name at the time the episode
  ended, which is what multi-task envs need).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from amago_core.data.timestep import Timestep
from amago_core.data.writer import TrajectoryWriter
from amago_core.rollout.env import AMAGO_ENV_LOG_PREFIX, AMAGOEnv


class StepResult(NamedTuple):
    """What a step hands back to the collector, all with a leading batch dim ``N``.

    The timestep's arrays are shared with the trajectory recorder: read them, copy them, never edit them in
    place.

    Attributes:
        timestep: the next policy input (a done row already shows its new episode's first observation).
        reward: ``(N,)`` float32 reward of the step just taken.
        terminated: ``(N,)`` bool.
        truncated: ``(N,)`` bool.
    """

    timestep: Timestep
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray

    @property
    def done(self) -> np.ndarray:
        """``terminated | truncated``: rows that were reset (recurrent state must be reset for them too)."""
        return self.terminated | self.truncated


def log_metrics_from_info(info: dict[str, Any]) -> dict[str, list[float]]:
    """Values of info keys that start with ``AMAGO_LOG_METRIC`` (prefix and surrounding spaces removed).

    Vectorised infos (arrays with a ``_key`` mask, gymnasium's layout) keep only the rows the mask marks.
    """
    out: dict[str, list[float]] = {}
    for key, value in info.items():
        if not (isinstance(key, str) and key.startswith(AMAGO_ENV_LOG_PREFIX)):
            continue
        arr = np.asarray(value)
        mask = info.get(f"_{key}")
        if mask is not None and np.shape(mask) == arr.shape:
            arr = arr[np.asarray(mask, dtype=bool)]
        values = arr.astype(np.float64).ravel().tolist()
        if values:
            out[key[len(AMAGO_ENV_LOG_PREFIX) :].strip()] = values
    return out


class SequenceEnv:
    """Same-step resets, trajectory recording and per-env-name histories for one env (plain or batched).

    Args:
        env: an ``AMAGOEnv``, optionally inside an exploration wrapper.
        writer: records trajectories (None: record nothing).
    """

    def __init__(self, env: AMAGOEnv, writer: TrajectoryWriter | None = None) -> None:
        self.env = env
        self.batched_envs = env.batched_envs
        self.writer = writer or TrajectoryWriter(env.batched_envs, None)
        if self.writer.num_rows != self.batched_envs:
            msg = f"writer records {self.writer.num_rows} rows but the env has {self.batched_envs}."
            raise ValueError(msg)
        self.current_timestep: Timestep | None = None
        self._episode_return = np.zeros(self.batched_envs, dtype=np.float64)
        self.reset_stats()
        self.total_frames = 0
        self.frames_by_env_name: dict[str, int] = defaultdict(int)

    def reset_stats(self) -> None:
        """Forgets the return and metric histories (frame counts are kept)."""
        self.return_history: dict[str, list[float]] = defaultdict(list)
        self.metric_history: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))

    @property
    def env_name(self) -> str:
        """The wrapped env's current name."""
        return self.env.env_name

    def reset(self, seed: int | None = None) -> Timestep:
        """Resets every row and starts new trajectories; returns the first policy input."""
        timestep, _ = self.env.reset(seed=seed)
        self._episode_return[:] = 0.0
        if self.writer.recording:
            for row in range(self.batched_envs):
                self.writer.start(row, timestep, index=row)
        self.current_timestep = timestep
        return timestep

    def step(self, action: Any) -> StepResult:
        """Steps every row; done rows are reset before returning (see module docstring)."""
        if self.current_timestep is None:
            msg = "SequenceEnv.step() before reset(); call reset() first."
            raise RuntimeError(msg)
        timestep, reward, terminated, truncated, info = self.env.step(action)
        # The names the step ran under: an env that resets finished rows inside its step (StackedEnv) may have
        # renamed them already (a multi-task env picks its next task at reset).
        names = self.env.step_env_names
        done = terminated | truncated
        self._episode_return += reward
        if self.writer.recording:
            for row in range(self.batched_envs):
                self.writer.add(row, timestep, done=bool(done[row]), env_name=names[row], index=row)
        self._log_info(info, names)
        self.total_frames += self.batched_envs
        if self.batched_envs == 1 or names.count(names[0]) == len(names):
            self.frames_by_env_name[names[0]] += self.batched_envs
        else:
            for name in names:
                self.frames_by_env_name[name] += 1
        if done.any():
            rows = np.flatnonzero(done)
            for row in rows.tolist():
                self.return_history[names[row]].append(float(self._episode_return[row]))
            self._episode_return[rows] = 0.0
            stacked_reset = getattr(self.env, "reset_timestep", None)
            if stacked_reset is not None:  # the env reset those rows itself, keeping the final obs
                timestep = stacked_reset
            elif self.batched_envs == 1:
                # gymnasium 1.x would only reset on the *next* step; the policy must see the new episode now.
                timestep, _ = self.env.reset()
            else:
                timestep = timestep.reset_version(rows)
            if self.writer.recording:
                for row in rows.tolist():
                    self.writer.start(row, timestep, index=row)
        self.current_timestep = timestep
        return StepResult(timestep, reward, terminated, truncated)

    def _log_info(self, info: Any, names: list[str]) -> None:
        if not info:
            return
        if isinstance(info, list):  # one dict per row
            for row_info, name in zip(info, names, strict=True):
                if row_info:
                    for key, values in log_metrics_from_info(row_info).items():
                        self.metric_history[name][key].extend(values)
            return
        # gymnasium's SAME_STEP vector envs move a finished row's info under "final_info".
        for source in (info, info.get("final_info")):
            if isinstance(source, dict):
                for key, values in log_metrics_from_info(source).items():
                    self.metric_history[names[0]][key].extend(values)

    def save_finished_trajs(self) -> list[Path]:
        """Writes the finished trajectories queued so far."""
        return self.writer.flush()

    def stats(self) -> dict[str, Any]:
        """Histories and frame counts as plain dicts (what pools gather from their workers)."""
        return {
            "return_history": {k: list(v) for k, v in self.return_history.items()},
            "metric_history": {n: {k: list(v) for k, v in m.items()} for n, m in self.metric_history.items()},
            "total_frames": self.total_frames,
            "frames_by_env_name": dict(self.frames_by_env_name),
        }

    def close(self) -> None:
        """Closes the env."""
        self.env.close()
