"""``DiskTrajDataset``: the replay buffer on disk, ``{dset_root}/{dset_name}/buffer/{fifo,protected}``.

Actors write finished trajectories into ``fifo/``; the process with edit rights deletes the oldest of them
(by the unix time in their names) beyond ``dset_max_size`` files. Files in ``protected/`` (demonstrations, old
runs) are sampled and never deleted. A file that cannot be read is skipped with one warning naming it and moved
to ``quarantine/`` (never deleted), so one bad file never stops training.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

from amago_core.data.dataset import DatasetNotReadyError, Relabeler, RLDataset
from amago_core.data.files import TrajFileError, is_traj_file, load_traj, parse_traj_file_name
from amago_core.data.rldata import RLData
from amago_core.data.trajectory import FrozenTraj

_MAX_SAMPLE_ATTEMPTS = 64


class CorruptTrajFileWarning(RuntimeWarning):
    """A trajectory file could not be read and was skipped."""


class PickledTrajFileWarning(RuntimeWarning):
    """``.traj`` files (pickles) in a buffer whose run did not choose that format were left unread."""


def _list_traj_files(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as it:
            return sorted(Path(e.path) for e in it if e.is_file() and is_traj_file(Path(e.name)))
    except FileNotFoundError:
        return []


def _file_age_key(path: Path) -> tuple[float, str]:
    parsed = parse_traj_file_name(path.name)
    if parsed is not None:
        return parsed[2], path.name
    # A file someone dropped in by hand: fall back on its modification time.
    try:
        return path.stat().st_mtime, path.name
    except FileNotFoundError:
        return float("-inf"), path.name


class DiskTrajDataset(RLDataset):
    """Uniform sampling over the trajectory files of a disk buffer.

    Args:
        dset_root: folder holding datasets.
        dset_name: this dataset's folder name (the buffer is ``dset_root/dset_name/buffer``).
        dset_max_size: FIFO capacity in files (protected files do not count).
        dset_min_size: files needed (FIFO + protected) before training starts.
        relabeler: rewrites each loaded file before slicing (None: unchanged).
        cache_size: keep this many recently read files in memory (0: off). Entries are keyed by path, size and
            modification time, and sampling always picks from the current file list, so a cache never hides
            new files or serves a replaced one.
        seed: sampling seed (see ``RLDataset``).
        allow_pickle_files: sample ``.traj`` files, which are pickles (unpickling can run code): only for a
            buffer this run writes in that format, or files you trust. Otherwise they are left unread, with a
            warning that counts them.
    """

    def __init__(
        self,
        dset_root: str | Path,
        dset_name: str,
        dset_max_size: int,
        dset_min_size: int = 1,
        relabeler: Relabeler | None = None,
        cache_size: int = 0,
        seed: int | None = None,
        allow_pickle_files: bool = False,
    ) -> None:
        super().__init__(dset_name=dset_name, seed=seed)
        if dset_max_size < 1 or dset_min_size < 0 or cache_size < 0:
            msg = (
                f"dset_max_size must be >= 1, dset_min_size and cache_size >= 0; got {dset_max_size}, "
                f"{dset_min_size}, {cache_size}."
            )
            raise ValueError(msg)
        self.dset_root = Path(dset_root)
        self.dset_path = self.dset_root / dset_name
        self.buffer_dir = self.dset_path / "buffer"
        self.fifo_dir = self.buffer_dir / "fifo"
        self.protected_dir = self.buffer_dir / "protected"
        self.quarantine_dir = self.buffer_dir / "quarantine"
        self.fifo_dir.mkdir(parents=True, exist_ok=True)
        self.protected_dir.mkdir(parents=True, exist_ok=True)
        self.dset_max_size = int(dset_max_size)
        self.dset_min_size = int(dset_min_size)
        self.relabeler = relabeler or Relabeler()
        self.cache_size = int(cache_size)
        self._cache: OrderedDict[tuple[str, int, int], FrozenTraj] = OrderedDict()
        self._skipped: set[Path] = set()
        self.allow_pickle_files = allow_pickle_files
        self.refused_pickle_files: set[Path] = set()
        """``.traj`` files seen and left unread (``allow_pickle_files`` is off)."""
        self.fifo_files: list[Path] = []
        self.protected_files: list[Path] = []
        self.refresh()

    @property
    def save_new_trajs_to(self) -> Path:
        """The FIFO folder."""
        return self.fifo_dir

    @property
    def all_files(self) -> list[Path]:
        """FIFO and protected files as last listed."""
        return self.fifo_files + self.protected_files

    def refresh(self) -> None:
        """Re-lists both folders (new files become sampleable, deleted ones disappear)."""
        fifo = [p for p in _list_traj_files(self.fifo_dir) if p not in self._skipped]
        protected = [p for p in _list_traj_files(self.protected_dir) if p not in self._skipped]
        if not self.allow_pickle_files:
            pickled = {p for p in fifo + protected if p.suffix == ".traj"}
            if pickled - self.refused_pickle_files:
                self.refused_pickle_files |= pickled
                warnings.warn(
                    f"{len(self.refused_pickle_files)} .traj file(s) in {self.buffer_dir} were left unread: .traj "
                    "files are pickles, which can run code when read. Set replay.save_trajs_as = 'traj' for a run "
                    "whose files you trust, or convert them to .npz.",
                    PickledTrajFileWarning,
                    stacklevel=2,
                )
            fifo = [p for p in fifo if p not in pickled]
            protected = [p for p in protected if p not in pickled]
        self.fifo_files, self.protected_files = fifo, protected

    def not_ready_reason(self) -> str | None:
        """Not ready until configured and holding at least ``dset_min_size`` (and at least one) files."""
        base = super().not_ready_reason()
        if base is not None:
            return base
        n = len(self.all_files)
        needed = max(self.dset_min_size, 1)
        if n < needed:
            return (
                f"replay buffer {self.buffer_dir} holds {n} trajectory file(s); training starts at {needed}. "
                "Collect more data first."
            )
        return None

    def on_end_of_collection(self) -> dict[str, Any]:
        """Refreshes the file lists and, with edit rights, deletes the oldest FIFO files beyond capacity.

        In multi-process runs the caller puts a barrier before and after, so that only the process with edit
        rights deletes and every process then re-lists.
        """
        self.refresh()
        if not self.has_edit_rights:
            return {}
        deleted = self.enforce_capacity()
        self.refresh()
        return {
            "Trajectory Files Saved in FIFO Replay Buffer": len(self.fifo_files),
            "Trajectory Files Saved in Protected Replay Buffer": len(self.protected_files),
            "Total Trajectory Files in Replay Buffer": len(self.all_files),
            "Trajectory Files Deleted": deleted,
            "Buffer Disk Space (GB)": self.disk_usage_bytes() / 1e9,
        }

    def enforce_capacity(self) -> int:
        """Deletes the oldest FIFO files until at most ``dset_max_size`` remain; protected files are untouched.

        Returns:
            The number of files deleted.
        """
        fifo = sorted(_list_traj_files(self.fifo_dir), key=_file_age_key)
        excess = len(fifo) - self.dset_max_size
        deleted = 0
        for path in fifo[: max(excess, 0)]:
            try:
                path.unlink()
                deleted += 1
            except FileNotFoundError:
                pass  # already gone (a sibling process or a person removed it): nothing to do
        return deleted

    def disk_usage_bytes(self) -> int:
        """Bytes used by the listed files."""
        total = 0
        for path in self.all_files:
            with contextlib.suppress(FileNotFoundError):  # deleted since the last listing
                total += path.stat().st_size
        return total

    def _load(self, path: Path) -> FrozenTraj:
        if self.cache_size == 0:
            return load_traj(path, allow_pickle=self.allow_pickle_files)
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        traj = load_traj(path, allow_pickle=self.allow_pickle_files)
        self._cache[key] = traj
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return traj

    def _skip_bad_file(self, path: Path, err: TrajFileError) -> None:
        self._skipped.add(path)
        moved_to = None
        if self.has_edit_rights:
            self.quarantine_dir.mkdir(parents=True, exist_ok=True)
            target = self.quarantine_dir / path.name
            try:
                shutil.move(path, target)
                moved_to = target
            except FileNotFoundError:
                pass  # another worker moved it first
        where = f"moved to {moved_to}" if moved_to else "left in place"
        warnings.warn(f"skipping {err} ({where}).", CorruptTrajFileWarning, stacklevel=3)

    def sample_random_trajectory(self) -> RLData:
        """Loads a uniformly random file (relabeled); unreadable files are skipped and moved aside.

        Raises:
            DatasetNotReadyError: the buffer holds no readable file.
        """
        for _ in range(_MAX_SAMPLE_ATTEMPTS):
            files = [p for p in self.all_files if p not in self._skipped]
            if not files:
                break
            path = files[int(self.rng.integers(len(files)))]
            try:
                traj = self._load(path)
            except FileNotFoundError:
                # Deleted by FIFO after we listed it: not an error, just gone.
                self._skipped.add(path)
                continue
            except TrajFileError as err:
                self._skip_bad_file(path, err)
                continue
            return RLData.from_frozen(self.relabeler(traj))
        reason = self.not_ready_reason() or f"replay buffer {self.buffer_dir} has no readable trajectory file"
        raise DatasetNotReadyError(reason)

    def delete(self, delete_protected: bool = False) -> None:
        """Removes the FIFO folder (and the protected one only when asked)."""
        shutil.rmtree(self.fifo_dir, ignore_errors=True)
        if delete_protected:
            shutil.rmtree(self.protected_dir, ignore_errors=True)
        self._cache.clear()
        self.refresh()

    def get_description(self) -> str:
        """Folder, capacity and current contents."""
        return (
            f"DiskTrajDataset {self.dset_name!r} at {self.buffer_dir}: {len(self.fifo_files)} FIFO file(s) "
            f"(max {self.dset_max_size}), {len(self.protected_files)} protected."
        )
