"""Checkpoints of an experiment: saving (with retention), loading, resuming, the latest weights other processes
read, and the one-line error a failed write into the run folder becomes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tqdm.auto import tqdm

from amago_core.experiment.checkpoints import (
    Progress,
    RefusedStateError,
    TrainingState,
    load_policy_weights,
    read_training_state,
)
from amago_core.experiment.run_dir import RunFolderWriteError, describe_write_failure, find_write_failure
from amago_core.experiment.safe_state import DamagedStateError
from amago_core.experiment.state import ExperimentState


class NoUsableCheckpointError(RuntimeError):
    """Complete checkpoints exist but none of them can be loaded; the message lists why for each."""


class CheckpointingMixin(ExperimentState):
    """Checkpoint methods of ``Experiment`` (AMAGO's names); the I/O itself is in ``checkpoints``."""

    def progress(self) -> Progress:
        """How far the run got (what a training state records besides the model and optimiser)."""
        return Progress(
            epoch=self.epoch,
            grad_update_counter=self.grad_update_counter,
            total_frames=self.total_frames,
            frames_by_env_name=dict(self.frames_by_env_name),
            num_processes=self._accelerator.num_processes,
            logger_step=self.logger.step if self.logger is not None else 0,
        )

    def _save_state(self, target: Path) -> Path:
        with self._writing(target):
            return self._store().save(
                target,
                policy=self.policy,
                optimizer=self.optimizer,
                scheduler=self.lr_schedule,
                progress=self.progress(),
                dataset_rng=self.dataset.rng if self.dataset is not None else None,
            )

    def save_checkpoint(self) -> None:
        """Saves the full training state (model, optimiser, schedule, RNG, progress) and the policy weights of
        this epoch (every ``ckpt_interval`` epochs), then removes the ones retention drops
        (``schedule.keep_states``, ``keep_state_every``, ``keep_policies``, ``keep_policy_every``).

        Pruning looks at every state and weights file in the folder, so a run resumed with a smaller
        ``keep_states`` shrinks here. Nothing is removed when a write fails.

        Raises:
            RunFolderWriteError: a write failed (a full disk, a read-only folder); earlier checkpoints are intact.
        """
        from amago_core.hooks.manager import hook_manager

        store, schedule = self._store(), self.config.schedule
        # The weights first: a kill between the two writes then leaves no kept state without its weights.
        weights = self.paths.policy_at(self.epoch)
        with self._writing(weights):
            store.write_weights(self.epoch, self.policy)
        target = self._save_state(self.paths.training_state(self.epoch))
        store.prune_states(schedule.keep_states, schedule.keep_state_every)
        store.prune_policies(schedule.keep_policies, schedule.keep_policy_every)
        hook_manager().hook.amago_on_checkpoint(experiment=self, epoch=self.epoch, path=target)

    def save_rolling_state(self) -> None:
        """Saves the training state of the epoch just completed as the rolling one (what ``--resume`` continues
        from), then removes the previous rolling state.

        Raises:
            RunFolderWriteError: the write failed; the previous rolling state is intact.
        """
        target = self._save_state(self.paths.rolling_state(self.epoch))
        self._store().prune_rolling(target)

    def load_checkpoint(self, epoch: int, resume_training_state: bool = True) -> None:
        """Loads the checkpoint of ``epoch``: the whole training state, or only the policy weights."""
        if resume_training_state:
            matches = [folder for e, folder in self.paths.saved_states() if e == epoch]
            if not matches:
                msg = f"no complete training state of epoch {epoch} in {self.paths.ckpts}; saved: {self.paths.saved_epochs()}"
                raise FileNotFoundError(msg)
            self.load_checkpoint_from_path(matches[0], is_accelerate_state=True)
        else:
            self.load_checkpoint_from_path(self.paths.policy_at(epoch), is_accelerate_state=False)
            self.epoch = epoch

    def load_checkpoint_from_path(self, path: str | Path, is_accelerate_state: bool = True) -> None:
        """Loads a training-state folder (``is_accelerate_state``, AMAGO's name), or a policy weights file.

        Raises:
            FileNotFoundError: nothing at ``path``.
            RefusedStateError: a folder of pickle files (never loaded), or a newer layout.
            DamagedStateError: a file of the state is cut short or unreadable.
        """
        path = Path(path)
        if not path.exists():
            msg = f"no checkpoint at {path}; `amago run --resume` picks the newest complete one"
            raise FileNotFoundError(msg)
        if is_accelerate_state:
            self._apply_state(read_training_state(path, self._accelerator.process_index))
        else:
            load_policy_weights(self.policy, path)
        loaded = getattr(self.policy, "on_checkpoint_loaded", None)
        if callable(loaded):
            loaded(is_accelerate_state)

    def _apply_state(self, state: TrainingState) -> None:
        self._store().apply(
            state,
            policy=self.policy,
            optimizer=self.optimizer,
            scheduler=self.lr_schedule,
            dataset_rng=self.dataset.rng if self.dataset is not None else None,
        )
        progress = state.progress
        self.epoch, self.grad_update_counter = progress.epoch, progress.grad_update_counter
        self.total_frames, self.frames_by_env_name = progress.total_frames, dict(progress.frames_by_env_name)
        if self.logger is not None:
            self.logger.step = progress.logger_step
        processes = self._accelerator.num_processes
        if progress.num_processes != processes and self._accelerator.is_main_process:
            sys.stderr.write(
                f"amago: warning: {state.folder} was saved by {progress.num_processes} process(es) and this run has "
                f"{processes}: the model and optimiser continue, but each process's random stream restarts and "
                "a gradient update now averages a different number of batches.\n"
            )

    def _newest_usable_state(self) -> TrainingState | None:
        """The newest training state that reads completely; says which newer ones were skipped and why.

        Raises:
            NoUsableCheckpointError: checkpoints exist, but none reads completely.
        """
        state, skipped = self._store().newest_usable()
        if self._accelerator.is_main_process:
            for line in skipped:
                sys.stderr.write(f"amago: warning: {line}\n")
        if state is None and skipped:
            msg = (
                f"no checkpoint of {self.paths.root} can be loaded ({'; '.join(skipped)}). Move the damaged "
                "folders away to start over in this folder, or start a new run."
            )
            raise NoUsableCheckpointError(msg)
        return state

    def _resume_from(self, state: TrainingState) -> int:
        try:
            self._apply_state(state)
        except DamagedStateError as exc:
            raise NoUsableCheckpointError(str(exc)) from exc
        if self.logger is not None:
            self.logger.rollback(after_epoch=state.progress.epoch)
        self.epoch = state.progress.epoch + 1
        return state.progress.epoch

    def resume_latest(self) -> int | None:
        """Loads the newest complete checkpoint and continues after its epoch; returns that epoch (or None).

        A damaged or refused newer checkpoint is skipped with one line. Metrics logged after the loaded epoch
        (work that is now redone) move out of ``metrics.jsonl``, so curves never run backwards. Call it after
        :meth:`start`; ``start(resume=True)`` does the same and also continues the exploration schedule.
        """
        state = self._newest_usable_state()
        return None if state is None else self._resume_from(state)

    def write_latest_policy(self) -> None:
        """Writes the current weights to ``ckpts/latest`` (what collect-only processes read).

        Raises:
            RunFolderWriteError: the write failed; the previous file is intact.
        """
        with self._writing(self.paths.latest_policy):
            self._store().write_latest(self.policy)

    def write_failure(self, exc: BaseException) -> RunFolderWriteError | None:
        """``exc`` as the one-line :class:`RunFolderWriteError` when a failed write into the run folder or its
        buffer caused it (itself or a cause); None for any other error."""
        if isinstance(exc, RunFolderWriteError):
            return exc
        found = find_write_failure(exc)
        if found is None:
            return None
        error, path = found
        if isinstance(error, RunFolderWriteError):
            return error
        return describe_write_failure(error, path, self.paths, self._buffer_dir())

    def _buffer_dir(self) -> Path | None:
        """The replay buffer's folder (a dataset without one on disk: None)."""
        folder = getattr(self.dataset, "buffer_dir", None)
        if folder is None and self.dataset is not None:
            folder = getattr(self.dataset, "save_new_trajs_to", None)
        return Path(folder) if folder is not None else None

    @contextmanager
    def _writing(self, path: Path) -> Iterator[None]:
        """Turns an OSError of writing ``path`` into the one-line :class:`RunFolderWriteError`."""
        try:
            yield
        except RunFolderWriteError:
            raise
        except OSError as exc:
            raise describe_write_failure(exc, path, self.paths, self._buffer_dir()) from exc

    def read_latest_policy(self) -> None:
        """Loads ``ckpts/latest`` if it exists (says so once when it is not written yet)."""
        if not self._store().read_latest(self.policy) and self._verbose_here:
            tqdm.write(
                f"no latest policy at {self.paths.latest_policy} yet; acting with the current weights",
                file=sys.stderr,
            )

    def delete_buffer_from_disk(self) -> None:
        """Deletes the replay buffer's FIFO files (main process)."""
        if self._accelerator.is_main_process:
            self._dataset().delete()


__all__ = ["CheckpointingMixin", "NoUsableCheckpointError", "RefusedStateError", "RunFolderWriteError"]
