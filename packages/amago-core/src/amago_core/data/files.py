"""Trajectory files: names, atomic writes and loading (``.npz``, compressed ``.npz``, ``.traj``).

The ``.npz`` layout is AMAGO's (``rl2s``, ``time_idxs``, ``rews``, ``dones``, ``actions``,
``_OBS_KEY_<name>``), so buffers and offline datasets saved by AMAGO load here. ``.traj`` is a pickle of the
per-timestep arrays (slowest, kept for relabelers that want timesteps), read only when asked for
(``allow_pickle=True``) and then through a restricted unpickler that admits numpy arrays and builtin containers
only, so a planted ``.traj`` cannot run code.

Every write goes to a hidden temp file in the target folder and is renamed into place: a reader lists either
nothing or the complete file, and a crash mid-write leaves only a temp file that no listing picks up.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from amago_core.data.timestep import Timestep
from amago_core.data.trajectory import FrozenTraj, Trajectory
from amago_core.io import plain_file_mode

SaveFormat = Literal["npz", "npz-compressed", "traj"]
"""How finished trajectories are written: ``npz`` (fastest), ``npz-compressed`` (smallest), ``traj`` (pickle)."""

SAVE_FORMATS: tuple[str, ...] = ("npz", "npz-compressed", "traj")
TRAJ_EXTENSIONS: tuple[str, ...] = (".npz", ".traj")
_TRAJ_PICKLE_TAG = "amago-traj-v1"

_TRAJ_PICKLE_GLOBALS = frozenset(
    {
        # What pickle writes for numpy arrays, scalars and dtypes (numpy >= 2 under numpy._core, older under
        # numpy.core): each only rebuilds an array from its bytes.
        *(
            (module, name)
            for core in ("numpy._core", "numpy.core")
            for module, name in (
                (f"{core}.multiarray", "_reconstruct"),
                (f"{core}.multiarray", "scalar"),
                (f"{core}.numeric", "_frombuffer"),
            )
        ),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        # Builtin containers and numbers that have no opcode of their own.
        *(("builtins", name) for name in ("set", "frozenset", "complex", "bytearray", "slice")),
    }
)
"""The only globals a ``.traj`` file may name: what amago's own ``.traj`` files hold (dicts and lists of numpy
arrays and scalars). Anything else (``os.system``, a class with a ``__reduce__``) is refused, never imported."""


class _TrajUnpickler(pickle.Unpickler):
    """Unpickles a ``.traj`` payload, admitting only :data:`_TRAJ_PICKLE_GLOBALS`."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _TRAJ_PICKLE_GLOBALS:
            return super().find_class(module, name)
        msg = (
            f"refused global {module}.{name}: a .traj file may hold only numpy arrays and builtin containers "
            "(was it written by amago, or planted?)"
        )
        raise pickle.UnpicklingError(msg)


class TrajFileError(Exception):
    """A trajectory file cannot be read (truncated, corrupt, or missing arrays).

    Attributes:
        path: the file.
    """

    def __init__(self, path: Path, reason: str) -> None:
        self.path = Path(path)
        super().__init__(f"cannot read trajectory file {self.path}: {reason}")


def clean_env_name(env_name: str) -> str:
    """``env_name`` made safe for a file name: no '_' (the name's field separator), no path separators."""
    cleaned = env_name.replace("_", "").replace("/", "").replace(os.sep, "").replace(" ", "")
    return cleaned or "env"


def traj_file_stem(env_name: str, file_id: str | None = None) -> str:
    """A fresh file name without extension: ``{env_name}_{id}_{unix time}`` (a random id when none is given)."""
    return f"{clean_env_name(env_name)}_{file_id or uuid.uuid4().hex[:8]}_{time.time()}"


def parse_traj_file_name(name: str) -> tuple[str, str, float] | None:
    """``(env_name, id, unix_time)`` of a trajectory file name, or None when it does not follow the pattern."""
    stem = Path(name).name
    for ext in TRAJ_EXTENSIONS:
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
            break
    parts = stem.split("_")
    if len(parts) != 3:
        return None
    try:
        return parts[0], parts[1], float(parts[2])
    except ValueError:
        return None


def is_traj_file(path: Path) -> bool:
    """True for a finished trajectory file (temp files are hidden and never match)."""
    return path.suffix in TRAJ_EXTENSIONS and not path.name.startswith(".")


def atomic_write(path: Path, write: Callable[[IO[bytes]], None], *, fsync: bool = False) -> Path:
    """Writes ``path`` through a hidden temp file in the same folder, then renames it into place.

    Args:
        path: final file path.
        write: called with the open temp file.
        fsync: flush to the disk before the rename (survives power loss, costs time per file).

    Returns:
        ``path``.
    """
    path = Path(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # Not mkstemp's 0600: a shared buffer is read by other users' processes.
        os.fchmod(fd, plain_file_mode())
        with os.fdopen(fd, "wb") as f:
            write(f)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        # Leave nothing half-written behind under the temp name either.
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return path


def _traj_to_payload(traj: Trajectory) -> dict:
    return {
        "format": _TRAJ_PICKLE_TAG,
        "timesteps": [{f.name: getattr(t, f.name) for f in fields(Timestep)} for t in traj.timesteps],
    }


def _traj_from_payload(payload: object) -> Trajectory:
    if not (isinstance(payload, dict) and payload.get("format") == _TRAJ_PICKLE_TAG):
        msg = "not an amago .traj payload"
        raise ValueError(msg)
    return Trajectory(Timestep(**t) for t in payload["timesteps"])


def save_traj(
    traj: Trajectory | FrozenTraj,
    folder: Path,
    stem: str,
    save_as: SaveFormat = "npz",
    *,
    fsync: bool = False,
) -> Path:
    """Writes one trajectory atomically as ``folder/stem.npz`` or ``folder/stem.traj``.

    Args:
        traj: what to write (``traj`` format needs a ``Trajectory``).
        folder: an existing directory.
        stem: file name without extension (see :func:`traj_file_stem`).
        save_as: ``npz``, ``npz-compressed`` or ``traj``.
        fsync: see :func:`atomic_write`.

    Returns:
        The written path.
    """
    folder = Path(folder)
    if save_as in ("npz", "npz-compressed"):
        # Typed as Any values: mypy matches ``**dict[str, ndarray]`` against savez's ``allow_pickle: bool``
        # keyword too and rejects it, although the keys are the trajectory's array names.
        arrays: dict[str, Any] = (traj.freeze() if isinstance(traj, Trajectory) else traj).to_dict()
        savez = np.savez_compressed if save_as == "npz-compressed" else np.savez
        return atomic_write(folder / f"{stem}.npz", lambda f: savez(f, **arrays), fsync=fsync)
    if save_as == "traj":
        if not isinstance(traj, Trajectory):
            msg = "save_as='traj' stores timesteps; pass a Trajectory, or save a FrozenTraj as 'npz'."
            raise TypeError(msg)
        payload = _traj_to_payload(traj)
        return atomic_write(
            folder / f"{stem}.traj", lambda f: pickle.dump(payload, f, protocol=5), fsync=fsync
        )
    msg = f"unknown save format {save_as!r}; choose one of {SAVE_FORMATS}."
    raise ValueError(msg)


def load_traj(path: Path, *, allow_pickle: bool = False) -> FrozenTraj:
    """Loads a trajectory file into its arrays.

    Args:
        path: an ``.npz`` (read with ``allow_pickle=False``: an object array is refused, never unpickled) or
            ``.traj`` file.
        allow_pickle: read ``.traj`` files, which are pickles. They are read through a restricted unpickler
            (numpy arrays and builtin containers only; any other global is refused with a ``TrajFileError``
            naming it), so this admits data, never code; still, it is a choice of the caller, never of a file or
            a run folder's config.

    Raises:
        FileNotFoundError: the file is gone (e.g. deleted by FIFO after it was listed); not a corrupt file.
        TrajFileError: the file exists but cannot be read, its arrays do not line up, it is a ``.traj`` file
            and ``allow_pickle`` is False, or it names a global the restricted unpickler refuses.
    """
    path = Path(path)
    if path.suffix == ".traj" and not allow_pickle:
        msg = (
            "a .traj file is a pickle; it is read only when you allow it (`amago run --allow-traj-pickles`, "
            "Experiment(..., allow_traj_pickles=True), load_traj(..., allow_pickle=True)), and then admits only "
            "numpy arrays and builtin containers"
        )
        raise TrajFileError(path, msg)
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                frozen = FrozenTraj.from_dict({k: data[k] for k in data.files})
        elif path.suffix == ".traj":
            with path.open("rb") as f:
                frozen = _traj_from_payload(_TrajUnpickler(f).load()).freeze()
        else:
            msg = f"unknown extension {path.suffix!r}; expected one of {TRAJ_EXTENSIONS}"
            raise TrajFileError(path, msg)
        frozen.check()
    except (FileNotFoundError, TrajFileError):
        raise
    except (
        OSError,
        EOFError,
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        zipfile.BadZipFile,
        pickle.UnpicklingError,
        AttributeError,
        ImportError,
    ) as exc:
        raise TrajFileError(path, f"{type(exc).__name__}: {exc}") from exc
    return frozen
