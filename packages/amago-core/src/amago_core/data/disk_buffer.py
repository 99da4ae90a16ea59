"""``DiskTrajDataset``: the replay buffer on disk, ``{dset_root}/{dset_name}/buffer/{fifo,protected}``.

Actors write finished trajectories into ``fifo/``; the process with edit rights deletes the oldest of them
(by the unix time in their names) beyond ``dset_max_size`` files. Files in ``protected/`` (demonstrations, old
runs) are sampled and never deleted. A file that cannot be read is skipped with one warning naming it and moved
to ``quarantine/``, so one bad file never stops training; the quarantine keeps the newest
``quarantine_max_files`` of them (a disk that corrupts files for days must not fill up with them).

Every delete and move stays inside ``{dset_root}/{dset_name}`` and goes through no symlink: a buffer may come
with a shared run folder, and a planted ``fifo`` link must not make FIFO eviction delete another folder's files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any

from amago_core.data.dataset import DatasetNotReadyError, Relabeler, RLDataset
from amago_core.data.files import TrajFileError, is_traj_file, load_traj, parse_traj_file_name
from amago_core.data.rldata import RLData
from amago_core.data.trajectory import FrozenTraj
from amago_core.io import inside

_MAX_SAMPLE_ATTEMPTS = 64
QUARANTINE_MAX_FILES = 100
"""Unreadable files kept in ``buffer/quarantine`` by default: the newest ones (by when they were moved there)."""


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
        allow_pickle_files: sample ``.traj`` files, which are pickles, read through a restricted unpickler
            (numpy arrays and builtin containers only). A choice of the caller, never of a config read from a run
            folder. Otherwise they are left unread, with a warning that counts them.
        quarantine_max_files: unreadable files to keep in ``quarantine/`` for a look (>= 0); older ones are
            deleted when a newer one arrives.

    Raises:
        ValueError: ``dset_name`` is not a plain folder name.
        amago_core.io.UnsafePathError: a folder of the buffer is a symlink (nothing is created or deleted).
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
        quarantine_max_files: int = QUARANTINE_MAX_FILES,
    ) -> None:
        super().__init__(dset_name=dset_name, seed=seed)
        if dset_max_size < 1 or dset_min_size < 0 or cache_size < 0 or quarantine_max_files < 0:
            msg = (
                f"dset_max_size must be >= 1, dset_min_size, cache_size and quarantine_max_files >= 0; got "
                f"{dset_max_size}, {dset_min_size}, {cache_size}, {quarantine_max_files}."
            )
            raise ValueError(msg)
        if (
            not dset_name
            or dset_name in (".", "..")
            or Path(dset_name).name != dset_name
            or "\\" in dset_name
        ):
            msg = f"dset_name must be a plain folder name (no '/', not '.' or '..'); got {dset_name!r}"
            raise ValueError(msg)
        self.dset_root = Path(dset_root)
        self.dset_path = self.dset_root / dset_name
        self.buffer_dir = self.dset_path / "buffer"
        self.fifo_dir = self.buffer_dir / "fifo"
        self.protected_dir = self.buffer_dir / "protected"
        self.quarantine_dir = self.buffer_dir / "quarantine"
        self.check(self.quarantine_dir)
        self.check(self.fifo_dir).mkdir(parents=True, exist_ok=True)
        self.check(self.protected_dir).mkdir(parents=True, exist_ok=True)
        self.dset_max_size = int(dset_max_size)
        self.dset_min_size = int(dset_min_size)
        self.relabeler = relabeler or Relabeler()
        self.cache_size = int(cache_size)
        self.quarantine_max_files = int(quarantine_max_files)
        self._cache: OrderedDict[tuple[str, int, int], FrozenTraj] = OrderedDict()
        self._skipped: set[Path] = set()
        self.allow_pickle_files = allow_pickle_files
        self.refused_pickle_files: set[Path] = set()
        """``.traj`` files seen and left unread (``allow_pickle_files`` is off)."""
        self.fifo_files: list[Path] = []
        self.protected_files: list[Path] = []
        self.refresh()

    def check(self, path: Path) -> Path:
        """Returns ``path`` once checked to stay in ``{dset_root}/{dset_name}`` through no symlink.

        Raises:
            amago_core.io.UnsafePathError: it would not (one line naming the symlink).
        """
        return inside(self.dset_path, path)

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
                    "files are pickles, read only when you allow it in this run (`amago run --allow-traj-pickles`, "
                    "Experiment(..., allow_traj_pickles=True)); or convert them to .npz.",
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
        fifo = sorted(_list_traj_files(self.check(self.fifo_dir)), key=_file_age_key)
        excess = len(fifo) - self.dset_max_size
        deleted = 0
        for path in fifo[: max(excess, 0)]:
            try:
                path.unlink()  # a file in the checked folder: a link among them goes, never what it points to
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
        where = "left in place"
        if self.has_edit_rights:
            self.check(self.quarantine_dir).mkdir(parents=True, exist_ok=True)
            target = self.check(self.quarantine_dir) / path.name
            try:
                self.check(path.parent)
                shutil.move(path, target)  # a link moves as the link, never what it points to
                # A rename keeps the write time; the quarantine keeps the newest arrivals.
                arrived = time.time_ns()
                os.utime(target, ns=(arrived, arrived))
            except FileNotFoundError:
                pass  # another worker moved it first
            else:
                self.prune_quarantine()
                where = (
                    f"moved to {target}; the quarantine keeps the newest {self.quarantine_max_files} files"
                    if self.quarantine_max_files
                    else "deleted: quarantine_max_files is 0"
                )
        warnings.warn(f"skipping {err} ({where}).", CorruptTrajFileWarning, stacklevel=3)

    def quarantined_files(self) -> list[Path]:
        """Files in ``quarantine/``, oldest arrival first."""
        found: list[tuple[int, str, Path]] = []
        try:
            with os.scandir(self.quarantine_dir) as it:
                for entry in it:
                    with contextlib.suppress(FileNotFoundError):  # pruned by a sibling process meanwhile
                        if entry.is_file():
                            found.append((entry.stat().st_mtime_ns, entry.name, Path(entry.path)))
        except FileNotFoundError:
            return []
        return [path for _, _, path in sorted(found)]

    def prune_quarantine(self) -> int:
        """Deletes the oldest quarantined files beyond ``quarantine_max_files``; returns how many went."""
        quarantined = self.quarantined_files()
        if quarantined:
            self.check(self.quarantine_dir)
        deleted = 0
        for path in quarantined[: max(len(quarantined) - self.quarantine_max_files, 0)]:
            with contextlib.suppress(FileNotFoundError):  # a sibling process pruned it first
                path.unlink()
                deleted += 1
        return deleted

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
            # The sampler's generator: saved with the training state, so relabeling resumes exactly too.
            return RLData.from_frozen(self.relabeler(traj, rng=self.rng))
        reason = self.not_ready_reason() or f"replay buffer {self.buffer_dir} has no readable trajectory file"
        raise DatasetNotReadyError(reason)

    def delete(self, delete_protected: bool = False) -> None:
        """Removes the FIFO folder (and the protected one only when asked)."""
        shutil.rmtree(self.check(self.fifo_dir), ignore_errors=True)
        if delete_protected:
            shutil.rmtree(self.check(self.protected_dir), ignore_errors=True)
        self._cache.clear()
        self.refresh()

    def get_description(self) -> str:
        """Folder, capacity and current contents."""
        return (
            f"DiskTrajDataset {self.dset_name!r} at {self.buffer_dir}: {len(self.fifo_files)} FIFO file(s) "
            f"(max {self.dset_max_size}), {len(self.protected_files)} protected."
        )
