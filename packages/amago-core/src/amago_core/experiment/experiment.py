"""``Experiment``: builds, trains and evaluates an agent (the seeds' Experiment API); the training loop lives here.

One process (or each of several under ``accelerate launch``) alternates: evaluate -> collect -> learn ->
checkpoint, epoch after epoch. Collect-only and learn-only processes share the buffer folder and the latest
policy file instead (``run.mode``). Settings live in one :class:`~amago_core.config.experiment.ExperimentConfig`;
an ``Experiment`` holds it plus what only exists at run time (the dataset, env makers, Python component classes,
the accelerator, the model).

It owns two parts with public interfaces: an :class:`~amago_core.experiment.env_runner.EnvRunner` (the env
pools, the policy's memory in them, the remote collector) and a :class:`~amago_core.experiment.learner.Learner`
(the model, its optimiser and schedule, the gradient step); AMAGO's override points (``interact``,
``compute_loss``, ...) stay methods here, and the parts are handed them. The class's methods still come in one
module per concern, each building on the one before: ``state`` (the config, progress, the parts),
``checkpointing``, ``interaction`` (collection and evaluation), ``setup`` (``start`` and the ``init_*``
methods), and this module (the loop and the gradient step). Helpers without state live beside them: ``components`` (each slot resolved once), ``pools`` (roles and seeds),
``acting`` (the rollout loop), ``training`` (batches), ``checkpoints`` (I/O), ``provenance`` (what a run
records), ``processes`` (modes and data parallelism).
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

import torch
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from amago_core.data.batch import Batch
from amago_core.experiment.processes import gather
from amago_core.experiment.progress import EpochReport, RunProgress
from amago_core.experiment.setup import SetupMixin
from amago_core.experiment.signals import stop_on_signals
from amago_core.experiment.training import train_loader, weighted_batches


class Experiment(SetupMixin):
    """Build, train, and evaluate an agent.

    Give the settings as AMAGO's flat keyword arguments (``Experiment(run_name=..., max_seq_len=...,
    learning_rate=3e-4, traj_encoder_type="mamba", make_train_env=...)``), as a validated ``config``, or both
    (keywords win). Every setting, its default and its meaning live in ``ExperimentConfig``; the keyword names map
    onto it through one table (``amago_core.config.flat``), so ``Experiment(learning_rate=3e-4)`` and ``amago run
    -o optim.learning_rate=3e-4`` run the same experiment. Settings read as attributes
    (``experiment.batch_size``, AMAGO's names); they change through :meth:`apply_settings` before :meth:`start`,
    never by assignment (``experiment.epochs = 5`` is refused). Component slots (``tstep_encoder_type``, ``traj_encoder_type``, ``agent_type``,
    ``exploration_wrapper_type``) also take classes, as in AMAGO.

    Call :meth:`start`, then :meth:`learn`. Override points: ``init_dsets``, ``init_envs``, ``init_model``,
    ``init_optimizer``, ``init_dloaders``, ``compute_loss``, ``train_step``, ``interact``, ``evaluate_val``,
    ``evaluate_test``.

    Args:
        config: the run's plan (:func:`~amago_core.config.resolve.plan_run`), or a validated config (or a mapping
            of one); None: planned from the keywords, like the CLI does (env suite preset under them, ``AMAGO_*``
            environment variables).
        dataset: where training sequences come from. None: a disk buffer at ``{dset_root}/{dset_name}``.
        make_train_env: returns an ``AMAGOEnv``, or a list with one maker per actor. None: the ``env`` setting's
            suite.
        make_val_env: like ``make_train_env``, for evaluation (never saved). None: ``make_train_env``.
        make_test_env: for the final test (held-out tasks where the suite has them). None: ``make_val_env``.
        registries: where components are looked up (default: the installed plugins).
        evaluation_only: build only what evaluating a trained policy needs (no buffer, no train or val envs,
            the run's config file left as it is).
        allow_traj_pickles: let the default buffer read ``.traj`` files (pickles), through a restricted unpickler
            that admits numpy arrays and builtin containers only. None: when this config writes that format
            (``replay.save_trajs_as = "traj"``). The CLI passes its ``--allow-traj-pickles`` flag, so that a
            config read from a run folder never decides it.
        **settings: AMAGO's ``Experiment`` parameters and the config fields by name.
    """

    # ---- learning ------------------------------------------------------------------------------------------
    def init_dloaders(self) -> DataLoader:
        """A DataLoader over the dataset for one epoch (rebuilt each epoch so workers see new files).

        Each item it yields is a list of ``(Batch, loss_weight)`` pairs: ``length_group_batches`` batches of
        similar lengths. An override may instead yield plain ``Batch`` objects, trained on with weight 1.
        """
        if self.dataset is None:
            msg = "no dataset: call start() (or init_dsets()) before init_dloaders()"
            raise RuntimeError(msg)
        self.train_dloader = train_loader(self.dataset, self.config, pin_memory=self.DEVICE.type == "cuda")
        return self.train_dloader

    def compute_loss(self, batch: Batch, log_step: bool) -> tuple[torch.Tensor, dict[str, Any]]:
        """The agent's loss and metrics for one batch (through the accelerate/DDP wrapper)."""
        return self.policy_aclr(batch, log_step=log_step)

    def train_step(self, batch: Batch, log_step: bool, loss_weight: float = 1.0) -> dict[str, Any]:
        """One gradient step (or one accumulation micro-step), the loss scaled by ``loss_weight``."""
        metrics, stepped = self._learner().step(
            batch.to_torch(self.DEVICE),
            log_step,
            loss_weight,
            compute_loss=self.compute_loss,
            caster=self.training_caster,
            grad_clip=self.config.optim.grad_clip,
        )
        if stepped:
            self.grad_update_counter += 1
        return metrics

    def _train_epoch(self) -> None:
        loader = self._accelerator.prepare(self.init_dloaders())
        self.policy_aclr.train()
        per_epoch, log_every = self.config.schedule.train_batches_per_epoch, self.config.logging.log_interval
        bar = tqdm(
            total=per_epoch, desc=f"learn (epoch {self.epoch})", leave=False, disable=not self._bars_here
        )
        for i, (batch, weight) in enumerate(weighted_batches(loader)):
            if i >= per_epoch or self._stop_now():
                break
            log_step = (self.epoch * per_epoch + i) % log_every == 0
            metrics = self.train_step(batch, log_step, loss_weight=weight)
            if log_step:
                metrics["Padded Sequence Length"] = batch.seq_len
                self.log(metrics, "train")
                self._epoch_metrics.update({f"train/{k}": v for k, v in metrics.items()})
            bar.update(1)
        bar.close()
        del loader
        self.train_dloader = None

    def learn(self) -> None:
        """The main loop: per epoch, evaluate -> collect -> learn -> checkpoint (see the seeds' docs).

        SIGINT or SIGTERM ends it cleanly: the current step finishes (one process) or the current epoch does
        (several), a training state is saved, and ``stopped_by`` names the signal. A second Ctrl-C aborts.
        ``schedule.max_minutes`` stops it the same way (``stopped_by == "max_minutes"``).

        Raises:
            RunFolderWriteError: a checkpoint, policy weights, a trajectory file or a metrics record could not
                be written (disk full, quota, read-only folder). The newest complete checkpoint and the buffer
                are intact; fix the cause and resume (``start(resume=True)``, `amago run --resume`).
        """
        if not self._started:
            msg = "call Experiment.start() before learn()"
            raise RuntimeError(msg)
        if self.evaluation_only:
            msg = "this Experiment was built with evaluation_only=True; build it without to train"
            raise RuntimeError(msg)
        self._started_at = started = time.monotonic()
        self.learn_start_counts = (self.total_frames, self.grad_update_counter)
        if self._verbose_here:
            self._progress = RunProgress(
                epochs=self.config.schedule.epochs,
                first_epoch=self.epoch,
                frames_target=self._frames_target(),
                frames_at_start=self.total_frames,
                updates_at_start=self.grad_update_counter,
            )
        with stop_on_signals(self._on_stop_signal, announce=self._accelerator.is_main_process):
            try:
                self._loop()
            except Exception as exc:
                failure = self.write_failure(exc)
                if failure is None:
                    raise
                self._write_failed = True
                if failure is exc:
                    raise
                raise failure from exc
            finally:
                self.wall_seconds = time.monotonic() - started
                # max_minutes bounds this loop, not the test pass a budget leaves time for.
                self._started_at = None
                if self._progress is not None:
                    self._progress.close()
                    self._progress = None

    def _frames_target(self) -> int:
        """Train env steps the whole schedule collects over every process (0 when this process never counts
        them): the progress line's target."""
        sched, rollout, ray = self.config.schedule, self.config.rollout, self.config.ray
        if not self._collects_this_run:
            return 0
        actors = (
            ray.actors * self.config.envs_per_ray_actor
            if ray.actors
            else rollout.parallel_actors * self._accelerator.num_processes
        )
        epochs = max(sched.epochs - sched.start_collecting_at_epoch, 0)
        return epochs * sched.train_timesteps_per_epoch * actors

    def _on_stop_signal(self, name: str) -> None:
        self.stopped_by = name

    def _loop(self) -> None:
        epoch = self.epoch
        while epoch < self.config.schedule.epochs and not self._stop_requested:
            self.epoch = epoch
            self._epoch_metrics = {}
            self._run_epoch(epoch)
            self._check_time_limit()
            stopping = self._agree_to_stop()
            if self.role.learns and (self.config.schedule.rolling_state or stopping):
                self.save_rolling_state()  # a kill from here on loses nothing of this epoch
            self.hooks_epoch_end(epoch)
            if self._progress is not None:
                self._progress.epoch_done(
                    EpochReport(epoch, self.total_frames, self.grad_update_counter, self._epoch_metrics)
                )
            epoch += 1
            if stopping:
                self._stop_requested = True
        self.epoch = epoch  # the next epoch to run: `epochs` when finished, earlier after a stop

    def _agree_to_stop(self) -> bool:
        """Whether any process received a stop signal (every process learns the same answer)."""
        return any(name is not None for name in gather(self._accelerator, self.stopped_by))

    def _wait_until_ready(self) -> bool:
        """Polls a dataset that another process fills; True once it is ready (or False if stopped)."""
        dataset, announced = self._dataset(), False
        while not dataset.ready_for_training and not self._stop_requested and self.stopped_by is None:
            if self._verbose_here and not announced:
                tqdm.write(f"waiting for training data: {dataset.not_ready_reason()}", file=sys.stderr)
                announced = True
            time.sleep(2.0)
            rescan = getattr(dataset, "refresh", None) or dataset.on_end_of_collection
            rescan()  # pick up the files other processes wrote meanwhile
        return dataset.ready_for_training

    def _run_epoch(self, epoch: int) -> None:
        sched, role, accelerator, dataset = (
            self.config.schedule,
            self.role,
            self._accelerator,
            self._dataset(),
        )
        if (sched.always_load_latest and not role.only_learns) or role.only_collects:
            self.read_latest_policy()
        if sched.val_interval and epoch % sched.val_interval == 0 and sched.val_timesteps_per_epoch > 0:
            self.evaluate_val()
        if role.collects and epoch >= sched.start_collecting_at_epoch and sched.train_timesteps_per_epoch > 0:
            self.collect_new_training_data()
        accelerator.wait_for_everyone()
        dataset_metrics = dataset.on_end_of_collection() if accelerator.is_main_process else {}
        accelerator.wait_for_everyone()
        if not accelerator.is_main_process:
            # Without edit rights this only re-lists (the main process's deletions, everyone's new files) and
            # moves the same schedules as the main process's call (a mixture's weights).
            dataset.on_end_of_collection()
        if dataset_metrics:
            self.log(dataset_metrics, "dataset")
            self._epoch_metrics.update({f"dataset/{k}": v for k, v in dataset_metrics.items()})
        if not role.learns:
            return
        if not dataset.ready_for_training and not (role.only_learns and self._wait_until_ready()):
            if self._verbose_here:
                tqdm.write(f"epoch {epoch}: not training yet ({dataset.not_ready_reason()})", file=sys.stderr)
            return
        if epoch < sched.start_learning_at_epoch:
            return
        if sched.train_batches_per_epoch > 0:
            self._train_epoch()
        accelerator.wait_for_everyone()
        if sched.ckpt_interval and epoch % sched.ckpt_interval == 0:
            self.save_checkpoint()
        if sched.always_save_latest or role.only_learns:
            self.write_latest_policy()

    def request_stop(self) -> None:
        """Ends :meth:`learn` after the current epoch (early stopping from a callback or a subclass)."""
        self._stop_requested = True

    def hooks_epoch_end(self, epoch: int) -> None:
        """Calls every plugin's ``amago_on_epoch_end`` with the epoch's metrics and x-axes."""
        from amago_core.hooks.manager import hook_manager

        metrics = {**self._epoch_metrics, **self.x_axis_metrics()}
        hook_manager().hook.amago_on_epoch_end(experiment=self, epoch=epoch, metrics=metrics)

    def close(self) -> None:
        """Closes envs, remote collectors (their actors stop) and log backends, and releases the run's lock."""
        if self.env_runner is not None:
            self.env_runner.close()
        if self.logger is not None:
            if getattr(self, "_write_failed", False):
                # The disk that failed may refuse the metrics file's last flush too; the failure is already
                # being reported, and a second error here would replace it.
                with contextlib.suppress(OSError):
                    self.logger.close()
            else:
                self.logger.close()
        lock = getattr(self, "_run_lock", None)
        if lock is not None:
            lock.release()  # last: another process may take the run over once its files are closed
