"""Checkpoints of an experiment: saving, loading, resuming and the latest weights other processes read."""

from __future__ import annotations

from pathlib import Path

from tqdm.auto import tqdm

from amago_core.experiment.checkpoints import Progress, load_policy_weights
from amago_core.experiment.state import ExperimentState


class CheckpointingMixin(ExperimentState):
    """Checkpoint methods of ``Experiment`` (AMAGO's names); the I/O itself is in ``checkpoints``."""

    # ---- checkpoints ---------------------------------------------------------------------------------------
    def progress(self) -> Progress:
        """How far the run got (what a training state records besides the model and optimiser)."""
        return Progress(
            self.epoch, self.grad_update_counter, self.total_frames, dict(self.frames_by_env_name)
        )

    def save_checkpoint(self) -> None:
        """Saves the full training state (model, optimiser, schedule, RNG) and the policy weights."""
        from amago_core.hooks.manager import hook_manager

        target = self._store().save(self.policy, self.progress())
        hook_manager().hook.amago_on_checkpoint(experiment=self, epoch=self.epoch, path=target)

    def load_checkpoint(self, epoch: int, resume_training_state: bool = True) -> None:
        """Loads the checkpoint of ``epoch``: the whole training state, or only the policy weights."""
        if resume_training_state:
            self.load_checkpoint_from_path(self.paths.training_state(epoch), is_accelerate_state=True)
        else:
            self.load_checkpoint_from_path(self.paths.policy_at(epoch), is_accelerate_state=False)
            self.epoch = epoch

    def load_checkpoint_from_path(self, path: str | Path, is_accelerate_state: bool = True) -> None:
        """Loads an accelerate training-state folder, or a policy weights file (``.safetensors``)."""
        path = Path(path)
        if is_accelerate_state:
            progress = self._store().load_training_state(path)
            self.epoch, self.grad_update_counter = progress.epoch, progress.grad_update_counter
            self.total_frames, self.frames_by_env_name = (
                progress.total_frames,
                dict(progress.frames_by_env_name),
            )
        else:
            if not path.exists():
                msg = f"no policy weights at {path}; pick an epoch with a checkpoint"
                raise FileNotFoundError(msg)
            load_policy_weights(self.policy, path)
        loaded = getattr(self.policy, "on_checkpoint_loaded", None)
        if callable(loaded):
            loaded(is_accelerate_state)

    def resume_latest(self) -> int | None:
        """Loads the newest complete checkpoint and continues after its epoch; returns that epoch (or None)."""
        epoch = self._store().newest_epoch()
        if epoch is None:
            return None
        self.load_checkpoint(epoch, resume_training_state=True)
        self.epoch = epoch + 1
        return epoch

    def write_latest_policy(self) -> None:
        """Writes the current weights to ``ckpts/latest`` (what collect-only processes read)."""
        self._store().write_latest(self.policy)

    def read_latest_policy(self) -> None:
        """Loads ``ckpts/latest`` if it exists (says so once when it is not written yet)."""
        if not self._store().read_latest(self.policy) and self._verbose_here:
            tqdm.write(f"no latest policy at {self.paths.latest_policy} yet; acting with the current weights")

    def delete_buffer_from_disk(self) -> None:
        """Deletes the replay buffer's FIFO files (main process)."""
        if self._accelerator.is_main_process:
            self._dataset().delete()
