"""``RLDataset``: the contract between the experiment loop and a source of training windows.

An epoch is synthetic: ``len(dataset)`` is the number of items the learner wants per epoch, and every item is a
fresh random trajectory cut to a random window, whatever index the dataloader asks for. The dataset is a
map-style dataset that a ``torch.utils.data.DataLoader`` accepts as is (collate with
:func:`amago_core.data.batch.collate`); it does not import torch.
"""

from __future__ import annotations

import os
import sys
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import numpy as np

from amago_core.data.rldata import PADDED_SAMPLING_MODES, PaddedSampling, RLData
from amago_core.data.trajectory import FrozenTraj


class DatasetNotReadyError(RuntimeError):
    """The dataset has nothing (or too little) to sample yet; collect more data before training."""


class Relabeler:
    """Rewrites a loaded trajectory before it is sliced (hindsight relabeling). The default changes nothing.

    ``relabel`` runs inside dataloader workers on the whole file, may edit arrays in place, change lengths or
    drop observation keys, and returns the trajectory to train on. A relabeler that draws random numbers draws
    them from :attr:`rng`.
    """

    rng: np.random.Generator | None = None
    """The generator to draw from. A dataset sets it to its own before every call: that generator is saved with
    the training state and is one stream per dataloader worker, so a resumed run relabels exactly as the
    uninterrupted one would, and workers never make the same choices."""

    def relabel(self, traj: FrozenTraj) -> FrozenTraj:
        """Returns the trajectory to train on."""
        return traj

    def __call__(self, traj: FrozenTraj, rng: np.random.Generator | None = None) -> FrozenTraj:
        """Relabels ``traj``, drawing from ``rng`` (the calling dataset's generator) when one is given."""
        if rng is not None:
            self.rng = rng
        return self.relabel(traj)


def worker_seed_key() -> tuple[int, int | None]:
    """``(process id, dataloader worker seed or None)``: changes when a dataset or relabeler has been copied into
    a DataLoader worker (by fork or pickle), whose random generator must then be made afresh; a generator made
    before the copy would give every worker the same draws."""
    torch = sys.modules.get("torch")
    info = torch.utils.data.get_worker_info() if torch is not None else None
    return os.getpid(), (int(info.seed) if info is not None else None)


class RLDataset(ABC):
    """Base class of training datasets.

    Args:
        dset_name: name used as a logging prefix (defaults to the class name).
        seed: seed of the sampling randomness (None: fresh OS entropy). Each dataloader worker derives its own
            stream from it and the worker's seed, so workers never draw identical samples.
    """

    def __init__(self, dset_name: str | None = None, seed: int | None = None) -> None:
        self.dset_name = dset_name or type(self).__name__
        self.seed = seed
        self.items_per_epoch: int | None = None
        self.max_seq_len: int | None = None
        self.padded_sampling: PaddedSampling = "none"
        self.has_edit_rights = True
        self._rng: np.random.Generator | None = None
        self._rng_key: tuple[int, int | None, int | None] | None = None
        self.draws_from: RLDataset | None = None
        """Another dataset whose generator this one draws from (a mixture's, for its children): one stream,
        which the training state saves, so a resumed run samples exactly as the uninterrupted one would."""

    def configure(
        self,
        items_per_epoch: int,
        max_seq_len: int | None,
        padded_sampling: PaddedSampling = "none",
        has_edit_rights: bool = True,
    ) -> None:
        """Second half of construction, done by the experiment.

        Args:
            items_per_epoch: ``len(self)`` (batches per epoch x batch size x processes).
            max_seq_len: window length in transitions (None: whole trajectories).
            padded_sampling: ``none``, ``left``, ``right``, ``both`` or ``center`` (see ``RLData.random_slice``).
            has_edit_rights: this process may delete or move files (one process per buffer).
        """
        if padded_sampling not in PADDED_SAMPLING_MODES:
            msg = f"padded_sampling must be one of {PADDED_SAMPLING_MODES}; got {padded_sampling!r}."
            raise ValueError(msg)
        self.items_per_epoch = int(items_per_epoch)
        self.max_seq_len = max_seq_len
        self.padded_sampling = padded_sampling
        self.has_edit_rights = has_edit_rights

    @property
    def configured(self) -> bool:
        """True once :meth:`configure` ran."""
        return self.items_per_epoch is not None

    def seed_for_process(self, process: int) -> None:
        """Gives data-parallel process ``process`` a sampling stream of its own, derived from :attr:`seed`.

        Every process of a run builds its dataset alike; seeded alike, they would all draw the very same windows
        and data parallelism would average one batch's gradient N times instead of N batches'. Process 0 keeps
        the seed, so a one-process run samples as before. Unseeded datasets already differ per process.
        """
        given = self.__dict__.setdefault("_seed_before_split", self.seed)  # calling again derives the same
        if given is not None and process > 0:
            self.seed = int(np.random.SeedSequence([given, process]).generate_state(1)[0])

    @property
    def rng(self) -> np.random.Generator:
        """This process's (and dataloader worker's) random generator (:attr:`draws_from`'s when set)."""
        if self.draws_from is not None:
            return self.draws_from.rng
        key = (*worker_seed_key(), self.seed)
        if self._rng is None or key != self._rng_key:
            if self.seed is None:
                self._rng = np.random.default_rng()
            else:
                entropy = [self.seed, key[1] if key[1] is not None else 0]
                self._rng = np.random.default_rng(np.random.SeedSequence(entropy))
            self._rng_key = key
        return self._rng

    def __len__(self) -> int:
        """Items per epoch (not the amount of data)."""
        if self.items_per_epoch is None:
            msg = f"{self.dset_name}: call configure(items_per_epoch=...) before using it as a dataset."
            raise RuntimeError(msg)
        return self.items_per_epoch

    def __getitem__(self, i: int) -> RLData:
        """A random window of a random trajectory (``i`` is ignored)."""
        data = self.sample_random_trajectory()
        if self.max_seq_len is not None:
            data = data.random_slice(self.max_seq_len, self.padded_sampling, rng=self.rng)
        return data

    @property
    @abstractmethod
    def save_new_trajs_to(self) -> Path | None:
        """Folder the actors write new trajectories to, or None when this dataset takes no new data."""

    @property
    def ready_for_training(self) -> bool:
        """True when sampling would succeed; the experiment skips training while False."""
        return self.not_ready_reason() is None

    def not_ready_reason(self) -> str | None:
        """Why the dataset cannot be sampled yet, or None when it can."""
        if not self.configured:
            return f"{self.dset_name} is not configured yet"
        return None

    def on_end_of_collection(self) -> dict[str, Any]:
        """Called after each collection phase, before training (refresh files, enforce capacity).

        Returns:
            Metrics to log under ``dataset/``.
        """
        return {}

    def delete(self) -> None:  # noqa: B027 (optional hook: datasets without data of their own keep this)
        """Removes this dataset's data (no-op by default)."""

    @abstractmethod
    def get_description(self) -> str:
        """A few lines for the startup summary."""

    @abstractmethod
    def sample_random_trajectory(self) -> RLData:
        """A whole random trajectory (or at least ``max_seq_len`` of one).

        Raises:
            DatasetNotReadyError: nothing to sample yet.
        """


class DoNothingDataset(RLDataset):
    """Never ready and saves nothing: for runs that only evaluate or collect without saving."""

    @property
    def save_new_trajs_to(self) -> Path | None:
        return None

    def not_ready_reason(self) -> str | None:
        return f"{self.dset_name} holds no data by design"

    def get_description(self) -> str:
        return "DoNothingDataset (no training data)"

    def sample_random_trajectory(self) -> RLData:
        raise DatasetNotReadyError(self.not_ready_reason())
