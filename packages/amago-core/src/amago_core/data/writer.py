"""``TrajectoryWriter``: records env rows step by step and writes finished trajectories as files.

A file ends when its episode ends (``terminated or truncated``) or, for long rollouts, after a snippet of about
``traj_save_len`` transitions; the next snippet starts with the *same* boundary timestep, so no transition is
lost. Snippet lengths are drawn from ``traj_save_len ± stagger`` (AMAGO: ``stagger = max_seq_len``) so that
training windows do not always start at multiples of ``traj_save_len``.

Files are written atomically (:func:`~amago_core.data.files.save_traj`): a failed write (a full disk, a read-only
folder) leaves no partial file and raises :class:`TrajectoryWriteError`, naming the file. Rows are recorded by
reference and gathered into arrays only when a file is written, so recording costs almost nothing per step and
timesteps handed to the writer must not be modified afterwards (the env layer always builds fresh ones).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import numpy as np

from amago_core.data.files import SAVE_FORMATS, SaveFormat, save_traj, traj_file_stem
from amago_core.data.timestep import Timestep
from amago_core.data.trajectory import FrozenTraj, Trajectory
from amago_core.io import inside

_Ref = tuple[Timestep, int]


class TrajectoryWriteError(OSError):
    """A trajectory file could not be written; ``errno`` and ``strerror`` are the write's, ``filename`` the file.

    Built like a plain ``OSError(errno, strerror, filename)``, so it survives the trip back from an async env
    worker (pickled) with its code and file.
    """


def _freeze_refs(refs: list[_Ref]) -> FrozenTraj:
    """The stored arrays of the timesteps ``refs`` point at (same layout as ``Trajectory.freeze``)."""
    first, _ = refs[0]
    obs = {k: np.stack([ts.obs[k][i] for ts, i in refs]) for k in first.obs}
    prev_action = np.stack([ts.prev_action[i] for ts, i in refs])
    reward = np.array([ts.reward[i] for ts, i in refs], dtype=np.float32)
    rl2s = np.empty((len(refs), 1 + prev_action.shape[1]), dtype=np.float32)
    rl2s[:, 0] = reward
    rl2s[:, 1:] = prev_action
    return FrozenTraj(
        obs=obs,
        rl2s=rl2s,
        time_idxs=np.array([ts.time_idx[i] for ts, i in refs], dtype=np.int64)[:, None],
        rews=reward[1:, None],
        dones=np.array([ts.terminal[i] for ts, i in refs[1:]], dtype=bool).reshape(-1, 1),
        actions=prev_action[1:].astype(np.float32),
    )


class TrajectoryWriter:
    """Per-row trajectory recorder with a queue of finished files.

    Args:
        num_rows: number of env rows recorded side by side.
        save_dir: folder the files go to; None records nothing (evaluation envs).
        save_as: ``npz``, ``npz-compressed`` or ``traj``.
        traj_save_len: split rollouts into snippets of about this many transitions; None keeps whole episodes.
        stagger: snippet lengths are drawn uniformly from ``traj_save_len ± stagger``.
        seed: seed of the length draws and of the file ids (None: fresh entropy). Seeded ids make the buffer's
            file order, and so which files a seeded run samples, the same run after run.
        fsync: flush files to disk before renaming them into place.
        name_file: makes a file stem from an env name (default: ``{env_name}_{id}_{unix_time}`` with an id from
            this writer's stream).
    """

    def __init__(
        self,
        num_rows: int,
        save_dir: Path | None,
        *,
        save_as: SaveFormat = "npz",
        traj_save_len: int | None = None,
        stagger: int = 0,
        seed: int | None = None,
        fsync: bool = False,
        name_file: Callable[[str], str] | None = None,
    ) -> None:
        if save_as not in SAVE_FORMATS:
            msg = f"unknown save format {save_as!r}; choose one of {SAVE_FORMATS}."
            raise ValueError(msg)
        if traj_save_len is not None and int(traj_save_len) < 1:
            msg = f"traj_save_len must be >= 1 (or None for whole episodes); got {traj_save_len}."
            raise ValueError(msg)
        if stagger < 0:
            msg = f"stagger must be >= 0; got {stagger}."
            raise ValueError(msg)
        self.num_rows = num_rows
        self.save_dir = Path(save_dir) if save_dir is not None else None
        self.save_as = save_as
        self.traj_save_len = int(traj_save_len) if traj_save_len is not None else None
        self.stagger = int(stagger)
        self.fsync = fsync
        self._rng = random.Random(seed)
        # A stream of its own, so that file ids never shift the snippet lengths a seed gives.
        self._ids = random.Random(None if seed is None else f"amago-file-ids-{seed}")
        self.name_file = name_file if name_file is not None else self._stem
        self._active: list[list[_Ref] | None] = [None] * num_rows
        self._since_save = [0] * num_rows
        self._save_len: list[int | None] = [None] * num_rows
        self._finished: list[tuple[str, list[_Ref]]] = []

    @property
    def recording(self) -> bool:
        """True when finished trajectories are saved."""
        return self.save_dir is not None

    @property
    def num_finished(self) -> int:
        """Finished trajectories waiting for :meth:`flush`."""
        return len(self._finished)

    def _stem(self, env_name: str) -> str:
        return traj_file_stem(env_name, file_id=f"{self._ids.getrandbits(32):08x}")

    def _draw_save_len(self) -> int | None:
        if self.traj_save_len is None:
            return None
        low = max(1, self.traj_save_len - self.stagger)
        return self._rng.randint(low, self.traj_save_len + self.stagger)

    def start(self, row: int, timestep: Timestep, index: int = 0) -> None:
        """Begins a new file for ``row`` whose first timestep is row ``index`` of ``timestep``."""
        self._since_save[row] = 0
        self._save_len[row] = self._draw_save_len()
        if self.recording:
            self._active[row] = [(timestep, index)]

    def add(self, row: int, timestep: Timestep, *, done: bool, env_name: str, index: int = 0) -> None:
        """Appends the next timestep of ``row`` (row ``index`` of ``timestep``).

        Args:
            row: env row.
            timestep: timestep returned by the env step (batched or not).
            done: ``terminated or truncated``: the file ends here and the caller calls :meth:`start` with the
                next episode's first timestep.
            env_name: name used for the file.
            index: which row of ``timestep`` belongs to ``row``.
        """
        self._since_save[row] += 1
        if self.recording:
            refs = self._active[row]
            if refs is None:
                msg = f"TrajectoryWriter.add(row={row}) before start(); call start() with the reset timestep."
                raise RuntimeError(msg)
            refs.append((timestep, index))
        if done:
            self._finish(row, env_name)
            return
        save_len = self._save_len[row]
        if save_len is not None and self._since_save[row] >= save_len:
            self._finish(row, env_name)
            self.start(row, timestep, index)

    def _finish(self, row: int, env_name: str) -> None:
        refs = self._active[row]
        self._active[row] = None
        if refs is not None and len(refs) > 1:
            self._finished.append((self.name_file(env_name), refs))

    def flush(self) -> list[Path]:
        """Writes every queued trajectory (atomically) and empties the queue.

        Returns:
            The written paths.

        Raises:
            TrajectoryWriteError: a file could not be written (the files before it are written and complete,
                it and the rest stay queued), or the folder is a symlink (nothing is written).
        """
        if self.save_dir is None:
            self._finished.clear()
            return []
        written: list[Path] = []
        target = self.save_dir
        try:
            # Never into a symlinked folder (a buffer may come with a shared run folder); the folders above it
            # are checked by the dataset that owns them. Each file replaces, never follows, a link at its name.
            inside(self.save_dir.parent, self.save_dir).mkdir(parents=True, exist_ok=True)
            for stem, refs in self._finished:
                target = self.save_dir / f"{stem}{'.traj' if self.save_as == 'traj' else '.npz'}"
                if self.save_as == "traj":
                    data: Trajectory | FrozenTraj = Trajectory(ts.row(i) for ts, i in refs)
                else:
                    data = _freeze_refs(refs)
                written.append(save_traj(data, self.save_dir, stem, self.save_as, fsync=self.fsync))
        except OSError as exc:
            raise TrajectoryWriteError(exc.errno, exc.strerror or str(exc), str(target)) from exc
        finally:
            # The written ones leave the queue even when a later one fails: a retry writes no duplicates.
            del self._finished[: len(written)]
        return written
