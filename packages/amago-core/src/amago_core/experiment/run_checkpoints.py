"""``RunCheckpoints``: what a running experiment saves and loads, with retention and one-line write failures.

It decides *what* a checkpoint is (the learner's model, optimiser and schedule, the progress counters, the
dataset's random stream) and in which order things are written; the file formats and the atomic writes are
:class:`~amago_core.experiment.checkpoints.CheckpointStore`'s.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np
from accelerate import Accelerator
from safetensors import SafetensorError

from amago_core.config.experiment import ScheduleSection
from amago_core.data.dataset import RLDataset
from amago_core.experiment.agent_api import ReloadAware
from amago_core.experiment.checkpoints import (
    MODEL_FILE,
    CheckpointStore,
    Progress,
    TrainingState,
    load_policy_weights,
    read_training_state,
    restore_random_states,
    save_policy_weights,
)
from amago_core.experiment.counters import RunCounters
from amago_core.experiment.learner import Learner
from amago_core.experiment.reports import RunReports
from amago_core.experiment.run_dir import RunFolderWriteError, RunPaths, buffer_dir_of, describe_write_failure
from amago_core.experiment.safe_state import DamagedStateError
from amago_core.file_format import RefusedStateError, migrated_config


class NoUsableCheckpointError(RuntimeError):
    """Complete checkpoints exist but none of them can be loaded; the message lists why for each."""


class CheckpointedRun(Protocol):
    """What the checkpoint part reads of its experiment (``Experiment`` has it; typed here so that this module sits
    below it)."""

    counters: RunCounters
    reports: RunReports
    dataset: RLDataset | None
    learner: Learner | None


class RunCheckpoints:
    """Saves and loads one run's checkpoints for a running experiment.

    Args:
        accelerator: this process's accelerator (processes agree on every write).
        paths: the run's folders.
        run: the experiment: its learner (built after this part, by ``init_model``), counters (saved with each
            state, restored from a loaded one), reports (the logger's record count, the checkpoint hook) and
            dataset (its random stream; its buffer folder, which a failed write names with its size).
    """

    def __init__(self, accelerator: Accelerator, paths: RunPaths, run: CheckpointedRun):
        self.accelerator = accelerator
        self.paths = paths
        self.store = CheckpointStore(accelerator, paths)
        self._run = run
        self._counters, self._reports = run.counters, run.reports

    def _learner(self) -> Learner:
        if self._run.learner is None:
            msg = "call Experiment.start() first: the agent is built there"
            raise RuntimeError(msg)
        return self._run.learner

    def progress(self) -> Progress:
        """How far the run got (what a training state records besides the model and optimiser)."""
        logger = self._reports.logger
        return self._counters.record(
            num_processes=self.accelerator.num_processes, logger_step=logger.step if logger is not None else 0
        )

    def _dataset_rng(self) -> np.random.Generator | None:
        return self._run.dataset.rng if self._run.dataset is not None else None

    def save_epoch(self, schedule: ScheduleSection) -> Path:
        """Saves the policy weights and the full training state of the current epoch, then removes what
        retention drops (over every state in the folder) and calls the checkpoint hook; returns the state's
        folder.

        Raises:
            RunFolderWriteError: a write failed; earlier checkpoints are intact and nothing was removed.
        """
        progress = self.progress()
        # The weights first: a kill between the two writes then leaves no kept state without its weights.
        self._write_weights(self.paths.policy_at(progress.epoch))
        target = self._save_state(self.paths.training_state(progress.epoch), progress)
        self.store.prune_states(schedule.keep_states, schedule.keep_state_every)
        self.store.prune_policies(schedule.keep_policies, schedule.keep_policy_every)
        self._reports.checkpointed(progress.epoch, target)
        return target

    def save_rolling(self) -> Path:
        """Saves the training state of the current epoch as the rolling one, then removes the previous one.

        Raises:
            RunFolderWriteError: the write failed; the previous rolling state is intact.
        """
        progress = self.progress()
        target = self._save_state(self.paths.rolling_state(progress.epoch), progress)
        self.store.prune_rolling(target)
        return target

    def _save_state(self, target: Path, progress: Progress) -> Path:
        learner = self._learner()
        with self.writing(target):
            return self.store.save(
                target,
                policy=learner.agent,
                optimizer=learner.optimizer,
                scheduler=learner.lr_schedule,
                progress=progress,
                dataset_rng=self._dataset_rng(),
            )

    def write_latest(self) -> None:
        """Writes the current weights to ``ckpts/latest`` (what collect-only processes read).

        Raises:
            RunFolderWriteError: the write failed; the previous file is intact.
        """
        self._write_weights(self.paths.latest_policy)

    def _write_weights(self, path: Path) -> None:
        agent, root = self._learner().agent, self.paths.root
        with self.writing(path):  # main process; a failure is raised in every process
            self.store.write_on_main(path, lambda: save_policy_weights(agent, path, root=root))

    def read_latest(self) -> bool:
        """Loads ``ckpts/latest`` into the agent if it exists; returns whether it did."""
        if not self.paths.latest_policy.is_file():
            return False
        load_policy_weights(self._learner().agent, self.paths.latest_policy, retries=10)
        return True

    @contextmanager
    def writing(self, path: Path) -> Iterator[None]:
        """Turns an OSError of writing ``path`` into the one-line :class:`RunFolderWriteError`."""
        try:
            yield
        except RunFolderWriteError:
            raise
        except OSError as exc:
            raise describe_write_failure(exc, path, self.paths, buffer_dir_of(self._run.dataset)) from exc

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

    def apply(self, state: TrainingState) -> None:
        """Loads ``state``: the learner's model, optimiser and schedule, the gradient scaler, the random streams,
        the counters and the logger's record count; says when it was saved by another number of processes.

        Raises:
            DamagedStateError: the model file turned out cut short while loading (nothing else was changed).
            RuntimeError: the state does not fit this model (saved with another agent or encoder config).
        """
        learner = self._learner()
        try:
            load_policy_weights(learner.agent, state.folder / MODEL_FILE)
        except (OSError, SafetensorError) as exc:
            msg = f"{state.folder / MODEL_FILE} cannot be read ({type(exc).__name__}: {exc})"
            raise DamagedStateError(msg) from exc
        learner.optimizer.load_state_dict(state.optimizer)
        learner.lr_schedule.load_state_dict(state.scheduler)
        if state.scaler is not None and self.accelerator.scaler is not None:
            self.accelerator.scaler.load_state_dict(state.scaler)
        if state.rng is not None:
            restore_random_states(state.rng, self._dataset_rng())
        saved, processes = state.progress.num_processes, self.accelerator.num_processes
        if saved != processes and self.accelerator.is_main_process:
            sys.stderr.write(
                f"amago: warning: {state.folder} was saved by {saved} process(es) and this run has "
                f"{processes}: the model and optimiser continue, but each process's random stream restarts and "
                "a gradient update now averages a different number of batches.\n"
            )
        self._counters.restore(state.progress)
        if self._reports.logger is not None:
            self._reports.logger.step = state.progress.logger_step

    def _check_config_format(self) -> None:
        """Refuses a run whose ``config.resolved.json`` has a newer format (one that does not read: the config's)."""
        try:
            migrated_config(json.loads(self.paths.config.read_text(encoding="utf-8")), self.paths.config)
        except RefusedStateError:
            raise
        except (OSError, ValueError, AttributeError):
            pass

    def newest_usable(self) -> TrainingState | None:
        """The newest training state that reads completely; says which newer ones were skipped and why.

        Raises:
            RefusedStateError: the run's config record is of a newer format than this amago's.
            NoUsableCheckpointError: checkpoints exist, but none reads completely.
        """
        self._check_config_format()
        state, skipped = None, []
        for epoch, folder in reversed(self.paths.saved_states()):
            try:
                state = read_training_state(folder, self.accelerator.process_index)
                break
            except (DamagedStateError, RefusedStateError) as exc:
                skipped.append(f"skipping the checkpoint of epoch {epoch}: {exc}")
        if self.accelerator.is_main_process:
            for line in skipped:
                sys.stderr.write(f"amago: warning: {line}\n")
        if state is None and skipped:
            msg = (
                f"no checkpoint of {self.paths.root} can be loaded ({'; '.join(skipped)}). Upgrade amago for a "
                "newer format; otherwise move the damaged folders away to start over here, or start a new run."
            )
            raise NoUsableCheckpointError(msg)
        return state

    def load_path(self, path: str | Path, *, whole_state: bool) -> None:
        """Loads a training-state folder (``whole_state``: :meth:`apply`) or a policy weights file, and tells an
        agent that reloads caches (:class:`~amago_core.experiment.agent_api.ReloadAware`).

        Raises:
            FileNotFoundError: nothing at ``path``.
            RefusedStateError: a folder of pickle files (never loaded), or a newer format (state, weights, config).
            DamagedStateError: a file of the state is cut short or unreadable.
        """
        path = Path(path)
        if not path.exists():
            msg = f"no checkpoint at {path}; `amago run --resume` picks the newest complete one"
            raise FileNotFoundError(msg)
        self._check_config_format()
        agent = self._learner().agent
        if whole_state:
            self.apply(read_training_state(path, self.accelerator.process_index))
        else:
            load_policy_weights(agent, path)
        if isinstance(agent, ReloadAware):
            agent.on_checkpoint_loaded(whole_state)


__all__ = ["CheckpointedRun", "DamagedStateError", "NoUsableCheckpointError", "RunCheckpoints"]
