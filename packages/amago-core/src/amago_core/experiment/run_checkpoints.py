"""``RunCheckpoints``: what a running experiment saves and loads, with retention and one-line write failures.

An :class:`~amago_core.experiment.Experiment` owns one (``experiment.checkpoints``, built by ``start()``). It
decides *what* a checkpoint is (the learner's model, optimiser and schedule, the progress counters, the dataset's
random stream) and in which order things are written; the file formats and the atomic writes are
:class:`~amago_core.experiment.checkpoints.CheckpointStore`'s. The experiment keeps AMAGO's method names
(``save_checkpoint``, ``load_checkpoint``...) as delegations to this part.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator

from amago_core.config.experiment import ScheduleSection
from amago_core.experiment.checkpoints import (
    CheckpointStore,
    Progress,
    TrainingState,
    load_policy_weights,
    read_training_state,
)
from amago_core.experiment.learner import Learner
from amago_core.experiment.run_dir import RunFolderWriteError, RunPaths, describe_write_failure
from amago_core.experiment.safe_state import DamagedStateError


class NoUsableCheckpointError(RuntimeError):
    """Complete checkpoints exist but none of them can be loaded; the message lists why for each."""


class RunCheckpoints:
    """Saves and loads one run's checkpoints for a running experiment.

    Args:
        accelerator: this process's accelerator (processes agree on every write).
        paths: the run's folders.
        buffer_dir: returns the replay buffer's folder, if the run has one (a failed write names its size).
    """

    def __init__(self, accelerator: Accelerator, paths: RunPaths, buffer_dir: Callable[[], Path | None]):
        self.accelerator = accelerator
        self.paths = paths
        self.store = CheckpointStore(accelerator, paths)
        self._buffer_dir = buffer_dir

    # ---- saving --------------------------------------------------------------------------------------------
    def save_epoch(
        self,
        learner: Learner,
        progress: Progress,
        dataset_rng: np.random.Generator | None,
        schedule: ScheduleSection,
    ) -> Path:
        """Saves the policy weights and the full training state of ``progress.epoch``, then removes what
        retention drops; returns the state's folder.

        Raises:
            RunFolderWriteError: a write failed; earlier checkpoints are intact and nothing was removed.
        """
        # The weights first: a kill between the two writes then leaves no kept state without its weights.
        with self.writing(self.paths.policy_at(progress.epoch)):
            self.store.write_weights(progress.epoch, learner.agent)
        target = self._save_state(self.paths.training_state(progress.epoch), learner, progress, dataset_rng)
        self.store.prune_states(schedule.keep_states, schedule.keep_state_every)
        self.store.prune_policies(schedule.keep_policies, schedule.keep_policy_every)
        return target

    def save_rolling(
        self, learner: Learner, progress: Progress, dataset_rng: np.random.Generator | None
    ) -> Path:
        """Saves the training state of ``progress.epoch`` as the rolling one, then removes the previous one.

        Raises:
            RunFolderWriteError: the write failed; the previous rolling state is intact.
        """
        target = self._save_state(self.paths.rolling_state(progress.epoch), learner, progress, dataset_rng)
        self.store.prune_rolling(target)
        return target

    def _save_state(
        self, target: Path, learner: Learner, progress: Progress, dataset_rng: np.random.Generator | None
    ) -> Path:
        with self.writing(target):
            return self.store.save(
                target,
                policy=learner.agent,
                optimizer=learner.optimizer,
                scheduler=learner.lr_schedule,
                progress=progress,
                dataset_rng=dataset_rng,
            )

    def write_latest(self, policy: torch.nn.Module) -> None:
        """Writes ``ckpts/latest`` (what collect-only processes read).

        Raises:
            RunFolderWriteError: the write failed; the previous file is intact.
        """
        with self.writing(self.paths.latest_policy):
            self.store.write_latest(policy)

    def read_latest(self, policy: torch.nn.Module) -> bool:
        """Loads ``ckpts/latest`` into ``policy`` if it exists; returns whether it did."""
        return self.store.read_latest(policy)

    @contextmanager
    def writing(self, path: Path) -> Iterator[None]:
        """Turns an OSError of writing ``path`` into the one-line :class:`RunFolderWriteError`."""
        try:
            yield
        except RunFolderWriteError:
            raise
        except OSError as exc:
            raise describe_write_failure(exc, path, self.paths, self._buffer_dir()) from exc

    # ---- loading -------------------------------------------------------------------------------------------
    def state_of_epoch(self, epoch: int) -> Path:
        """The folder of the complete training state saved after ``epoch``.

        Raises:
            FileNotFoundError: no complete state of that epoch (the message lists the saved ones).
        """
        matches = [folder for e, folder in self.paths.saved_states() if e == epoch]
        if not matches:
            msg = f"no complete training state of epoch {epoch} in {self.paths.ckpts}; saved: {self.paths.saved_epochs()}"
            raise FileNotFoundError(msg)
        return matches[0]

    def read(self, folder: Path) -> TrainingState:
        """Reads and checks a training-state folder (this process's random streams included).

        Raises:
            RefusedStateError: a folder of pickle files (never loaded), or a newer layout.
            DamagedStateError: a file of the state is cut short or unreadable.
        """
        return read_training_state(folder, self.accelerator.process_index)

    def apply(self, state: TrainingState, learner: Learner, dataset_rng: np.random.Generator | None) -> None:
        """Loads ``state`` into the learner and the random streams (the caller takes its progress counters);
        says when it was saved by another number of processes.

        Raises:
            DamagedStateError: the model file turned out cut short while loading.
            RuntimeError: the state does not fit this model.
        """
        self.store.apply(
            state,
            policy=learner.agent,
            optimizer=learner.optimizer,
            scheduler=learner.lr_schedule,
            dataset_rng=dataset_rng,
        )
        saved, processes = state.progress.num_processes, self.accelerator.num_processes
        if saved != processes and self.accelerator.is_main_process:
            sys.stderr.write(
                f"amago: warning: {state.folder} was saved by {saved} process(es) and this run has "
                f"{processes}: the model and optimiser continue, but each process's random stream restarts and "
                "a gradient update now averages a different number of batches.\n"
            )

    def newest_usable(self) -> TrainingState | None:
        """The newest training state that reads completely; says which newer ones were skipped and why.

        Raises:
            NoUsableCheckpointError: checkpoints exist, but none reads completely.
        """
        state, skipped = self.store.newest_usable()
        if self.accelerator.is_main_process:
            for line in skipped:
                sys.stderr.write(f"amago: warning: {line}\n")
        if state is None and skipped:
            msg = (
                f"no checkpoint of {self.paths.root} can be loaded ({'; '.join(skipped)}). Move the damaged "
                "folders away to start over in this folder, or start a new run."
            )
            raise NoUsableCheckpointError(msg)
        return state

    def load_weights(self, policy: torch.nn.Module, path: Path) -> None:
        """Loads a policy weights file into ``policy``."""
        load_policy_weights(policy, path)


__all__ = ["DamagedStateError", "NoUsableCheckpointError", "RunCheckpoints"]
