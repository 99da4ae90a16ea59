"""``RunSession``: this process's share of a run, opened by ``Experiment.start``: the precision, the accelerator,
the seed (one config and shared folders when several processes run one job), torch's settings, and the run's lock
(taken before any file of the run is written)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed

from amago_core.config.experiment import ExperimentConfig
from amago_core.experiment import setup
from amago_core.experiment.hardware import PrecisionChoice
from amago_core.experiment.processes import ProcessRole
from amago_core.experiment.run_dir import RunPaths
from amago_core.experiment.run_lock import RunLock, hold_run
from amago_core.experiment.shared_run import agree_on_config, check_shared_folders


class RunSession:
    """Opens this process's share of a run; its ``config``, ``paths``, ``accelerator`` and ``precision`` are what
    :meth:`open` settled so far (also when it failed part way: the start removes what it created from them).

    Args:
        config: the run's config (with several processes: the main process's run name, one config for all).
        paths: the run's folders.
        role: this process's role.
        evaluation_only: the experiment only evaluates a trained policy.
        own_dataset: the experiment was given its own dataset (no default buffer folder is written).
    """

    def __init__(
        self,
        config: ExperimentConfig,
        paths: RunPaths,
        role: ProcessRole,
        evaluation_only: bool,
        own_dataset: bool,
    ) -> None:
        self.config = config
        self.paths = paths
        self.accelerator: Accelerator | None = None
        self.precision: PrecisionChoice | None = None
        """The start's precision choice (the config keeps what was asked for); ``auto`` on native bf16 settles once
        the model exists (:meth:`settle_precision`)."""
        self._role, self._evaluation_only, self._own_dataset = role, evaluation_only, own_dataset
        self._recorded_choice: dict[str, Any] | None = None
        self._lock: RunLock | None = None

    @property
    def trains(self) -> bool:
        """Whether this process trains (an evaluation or a collect-only process does not)."""
        return not (self._evaluation_only or self._role.only_collects)

    def open(self, resume: bool) -> None:
        """Chooses the precision, opens the accelerator, agrees on the seed (and, with several processes, on the
        config and folders), sets torch up and takes the run's lock.

        Raises:
            ExistingRunError, RunInUseError: the folder holds a run this start may not write (the message says
                what to do); RunDisagreementError: the processes resolved different settings or folders.
        """
        self.precision = setup.choose_run_precision(self.config, self.paths, resume=resume)
        self._recorded_choice = setup.recorded_precision_choice(self.paths) if resume else None
        self.accelerator = accelerator = setup.open_accelerator(self.config, self.precision.used)
        warning = self.precision.warning()
        # Only the training forward is cast on a CPU: a process that does not train pays nothing for it.
        if warning is not None and self.trains and accelerator.is_local_main_process:
            sys.stderr.write(f"amago: warning: {warning}\n")
        self.config = setup.with_agreed_seed(self.config, accelerator)
        if accelerator.num_processes > 1:  # one config (the main process's run name), folders they all share
            self.config = agree_on_config(accelerator, self.config)
            self.paths = RunPaths(Path(self.config.run.ckpt_base_dir), str(self.config.run.name))
            folders = setup.folders_start_may_create(self.config, self.paths)
            no_buffer = self._own_dataset or self._evaluation_only  # only the run folder is written
            check_shared_folders(accelerator, list(dict.fromkeys(folders[:1] if no_buffer else folders)))
        set_seed(cast(int, self.config.run.seed) + accelerator.process_index)
        setup.configure_torch(self.config, accelerator)
        self._lock = hold_run(
            self.paths, accelerator, self._role, resume=resume, evaluation_only=self._evaluation_only
        )

    def settle_precision(
        self, agent: Callable[[], torch.nn.Module], spaces: Callable[[], tuple[Any, Any, Any]]
    ) -> PrecisionChoice:
        """The precision once the model exists: ``auto`` on native bf16 takes, for each phase, the precision an
        update and a policy step of this model measured faster in; a resumed run says when that differs from its
        last start.

        Args:
            agent: returns the run's agent.
            spaces: returns its observation, previous-reward-and-action and action spaces (``init_envs`` reads them).
        """
        choice, accelerator = cast(PrecisionChoice, self.precision), cast(Accelerator, self.accelerator)
        if choice.pending:
            read = spaces()
            if any(space is None for space in read):
                msg = "the precision is timed on the run's model: call init_envs() and init_model() first."
                raise RuntimeError(msg)
            choice = setup.timed_precision(
                choice, agent(), read, self.config, accelerator, time_update=self.trains
            )
        note = choice.resume_note(self._recorded_choice)
        if note is not None and accelerator.is_local_main_process:
            sys.stderr.write(f"amago: note: {note}\n")
        self.precision = choice
        return choice

    def release(self) -> None:
        """Releases the run's lock (last at close: another process may take the run over then)."""
        if self._lock is not None:
            self._lock.release()
