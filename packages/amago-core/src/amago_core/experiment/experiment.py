"""``Experiment``: the training loop over one config (build, train, evaluate an agent).

Per epoch: evaluate -> collect -> learn -> checkpoint. The experiment owns parts with public interfaces
(``counters``, ``stop``, ``reports``; from :meth:`Experiment.start` on ``session``, ``env_runner``, ``learner``,
``checkpoints``) and hands them its overridable methods (the runner runs ``interact``, the learner minimises
``compute_loss``), so a subclass's override is what runs.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from amago_core.config.components import RunComponents, UserClass
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.resolve import RunPlan
from amago_core.data.batch import Batch
from amago_core.data.dataset import RLDataset
from amago_core.experiment import precision_probe, run_inputs, setup
from amago_core.experiment.acting import run_policy, step_observer
from amago_core.experiment.agent_api import RolloutPolicy
from amago_core.experiment.checkpoints import Progress
from amago_core.experiment.collectors import Collector, build_collector
from amago_core.experiment.counters import RunCounters, read_only
from amago_core.experiment.env_runner import EnvRunner
from amago_core.experiment.fast_torch import compile_wanted
from amago_core.experiment.hardware import PrecisionChoice
from amago_core.experiment.hook_view import HookView
from amago_core.experiment.learner import Learner
from amago_core.experiment.logger import RunLogger
from amago_core.experiment.metrics import AVERAGE_RETURN_KEY
from amago_core.experiment.optimizers import default_optimizer
from amago_core.experiment.pools import EnvMakers, MakersWrapper, RolePool
from amago_core.experiment.processes import ProcessRole, average_over_processes, gather, torch_threads_while
from amago_core.experiment.progress import stderr_is_tty
from amago_core.experiment.provenance import run_record, summary_lines, write_run_files
from amago_core.experiment.reports import RunReports
from amago_core.experiment.resume import finish_resume, load_resumed_state
from amago_core.experiment.run_checkpoints import NoUsableCheckpointError, RunCheckpoints
from amago_core.experiment.run_dir import (
    RunFolderWriteError,
    RunPaths,
    as_write_failures,
    buffer_dir_of,
    write_failure_of,
)
from amago_core.experiment.session import RunSession
from amago_core.experiment.signals import TIME_LIMIT, StopState, stop_on_signals
from amago_core.experiment.training import end_of_collection, train_loader, wait_until_ready, weighted_batches
from amago_core.plugins.registry import Registries
from amago_core.rollout.spaces import PolicySpaces

if TYPE_CHECKING:
    import gymnasium

Part = TypeVar("Part")


class Experiment:
    """Build, train, and evaluate an agent: call :meth:`start`, then :meth:`learn`.

    Settings come as a plan (``plan_run``), a validated ``ExperimentConfig`` or its mapping; read them through
    ``experiment.config``. ``Experiment({"optim": {"learning_rate": 3e-4}})`` and ``amago run -o
    optim.learning_rate=3e-4`` run the same experiment. AMAGO's flat keywords (``learning_rate=3e-4``) are
    ``amago.Experiment``'s, a subclass in the compatibility layer; here a keyword that is no parameter is refused
    in one line. Override points: ``init_dsets``, ``init_envs``, ``init_model``, ``init_optimizer``,
    ``init_dloaders``, ``compute_loss``, ``train_step``, ``interact``, ``collect_new_training_data``,
    ``evaluate_val``, ``evaluate_test``.

    Args:
        config: a plan (built from its resolved components), a validated config, or its mapping.
        dataset: where training sequences come from. None: a disk buffer at ``{dset_root}/{dset_name}``.
        make_train_env: returns an ``AMAGOEnv``, or a list with one maker per actor. None: the ``env`` suite's.
        make_val_env: like ``make_train_env``, for evaluation (never saved). None: ``make_train_env``.
        make_test_env: for the final test (held-out tasks where the suite has them). None: ``make_val_env``.
        registries: where components are looked up (default: the plan's, else the installed plugins).
        evaluation_only: build only what evaluating a trained policy needs (no buffer, train or val envs).
        allow_traj_pickles: let the default buffer read ``.traj`` files (pickles, restricted to numpy arrays and
            builtins). None: when this config writes them (the CLI passes ``--allow-traj-pickles``, never a config).
        classes: Python classes (or factories) for component slots, by slot (``{"traj_encoder": MyEncoder}``),
            as AMAGO took them; each wins over the config's choice for its slot.
    """

    # Read from one env by init_envs (AMAGO's attribute names).
    obs_space: gymnasium.spaces.Space[Any]
    action_space: gymnasium.spaces.Space[Any]
    rl2_space: gymnasium.spaces.Box

    def __init__(
        self,
        config: RunPlan | ExperimentConfig | Mapping[str, Any],
        *,
        dataset: RLDataset | None = None,
        make_train_env: EnvMakers | None = None,
        make_val_env: EnvMakers | None = None,
        make_test_env: EnvMakers | None = None,
        registries: Registries | None = None,
        evaluation_only: bool = False,
        allow_traj_pickles: bool | None = None,
        classes: Mapping[str, UserClass] | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise TypeError(run_inputs.unknown_keyword_line(list(unknown)))
        makers, own = (make_train_env, make_val_env, make_test_env), dataset is not None
        inputs = run_inputs.RunInputs.of(
            config, classes or {}, registries, makers, own, evaluation_only, allow_traj_pickles
        )
        self.config, self.components, self.registries = inputs.config, inputs.components, inputs.registries
        self.classes: dict[str, UserClass] = dict(inputs.classes)
        self.given_makers = inputs.given_makers
        self.make_train_env, self.make_val_env, self.make_test_env = inputs.makers
        self.allow_traj_pickles, self.evaluation_only = inputs.allow_traj_pickles, evaluation_only
        self.role = ProcessRole.of(self.config)
        self.dataset = dataset
        self.paths = RunPaths(Path(self.config.run.ckpt_base_dir), str(self.config.run.name))
        self.counters = RunCounters()
        self.stop = StopState(lambda: self.counters.learn_seconds, lambda: self.config.schedule.max_minutes)
        self.hook_view = HookView(self)  # what the experiment hooks receive (``amago_core.hooks.RunView``)
        self.reports = RunReports(self.counters, self.hook_view, evaluation_only=evaluation_only)
        # The parts, built by start().
        self.session: RunSession | None = None
        self.accelerator: Accelerator | None = None
        self.precision: PrecisionChoice | None = None  # what `auto` resolved to, and why
        self.env_runner: EnvRunner | None = None
        self.learner: Learner | None = None
        self.checkpoints: RunCheckpoints | None = None
        self.train_dloader: DataLoader | None = None
        self.policy_spaces: PolicySpaces | None = None  # init_envs reads them (spaces.json)
        self._started = False

    def use_config(self, config: ExperimentConfig, classes: Mapping[str, UserClass] | None = None) -> None:
        """Runs with ``config`` (and ``classes`` for the slots, when given) from now on: before :meth:`start` it
        decides what is built; ``epochs`` and the schedule also take effect in a running loop."""
        if classes is not None:
            run_inputs.check_classes(classes)
            self.classes = dict(classes)
        self.config = config.resolved(self.registries)
        self.components = RunComponents.resolve(self.config, self.registries, self.classes)
        if self.env_runner is not None:  # a running loop's schedule changed: the runner reads the same config
            self.env_runner.config, self.env_runner.components = self.config, self.components
        self.role = ProcessRole.of(self.config)
        self.make_train_env, self.make_val_env, self.make_test_env = run_inputs.env_makers(
            self.given_makers, self.config, self.registries
        )

    epoch: int = read_only("counters", "epoch", "The epoch running (or just done); after learn(), the next.")
    grad_update_counter: int = read_only("counters", "grad_update_counter", "Optimiser updates so far.")
    total_frames: int = read_only("counters", "total_frames", "Env steps so far, over every process.")
    stopped_by: str | None = read_only("stop", "stopped_by", "The signal or TIME_LIMIT that ended learn().")
    logger: RunLogger | None = read_only("reports", "logger", "The log backends (from init_logger on).")
    val_envs: RolePool | None = read_only("env_runner", "val_envs", "This process's val pool (None: none).")
    collector: Collector | None = read_only("env_runner", "collector", "The remote collector, if any.")

    def request_stop(self) -> None:
        """Ends :meth:`learn` after the current epoch (early stopping from a callback or a subclass)."""
        self.stop.request()

    @property
    def policy(self) -> torch.nn.Module:
        """The agent as ``init_model`` built it (DDP shares its parameters; unwrapping would import torch's compiler)."""
        return self._built(self.learner).agent

    @property
    def policy_aclr(self) -> torch.nn.Module:
        """The agent as accelerate prepared it (DDP-wrapped when several processes train)."""
        return self._built(self.learner).prepared

    def _built(self, part: Part | None, why: str = "the agent is built there") -> Part:
        if part is None:
            msg = f"call Experiment.start() first: {why}"
            raise RuntimeError(msg)
        return part

    @property
    def _accelerator(self) -> Accelerator:
        return self._built(self.accelerator, "the accelerator, envs and model are built there")

    @property
    def _collects_this_run(self) -> bool:
        return run_inputs.collects_this_run(self.config, self.role, self.evaluation_only)

    def caster(self) -> AbstractContextManager[Any]:
        """Autocast context of rollouts: the precision the start chose for acting (``experiment.hardware``)."""
        precision = self.precision.rollout if self.precision is not None else "no"
        return precision_probe.autocast_for(self._accelerator.device.type, precision)

    def training_caster(self) -> AbstractContextManager[Any]:
        """Autocast context of the training forward: the precision the start chose for the update."""
        chosen = self.precision.used if self.precision is not None else self.config.optim.mixed_precision
        return precision_probe.autocast_for(self._accelerator.device.type, chosen)

    def start(self, resume: bool = False) -> None:
        """Builds everything (dataset, envs, model, checkpoints, logger); call before :meth:`learn`.

        Args:
            resume: continue from the run folder's newest usable training state (``amago run --resume``): model,
                optimiser, schedule, random streams, counters, exploration schedule; ``metrics.jsonl`` without the
                records of work that is redone. None saved: from scratch.
        """
        self.components.load_factories()  # a broken plugin fails here, in one line, before anything is on disk
        folders = lambda: setup.folders_start_may_create(self.config, self.paths)  # noqa: E731
        with setup.removing_new_folders(folders, self.close):
            self._start(resume)

    def _start(self, resume: bool) -> None:
        own = self.dataset is not None
        session = self.session = RunSession(self.config, self.paths, self.role, self.evaluation_only, own)
        try:
            session.open(resume)
        finally:  # what the processes agreed on so far, also for the cleanup of a failed start
            self.config, self.paths, self.accelerator = session.config, session.paths, session.accelerator
            self.precision = session.precision
        accelerator = self._accelerator
        self.checkpoints = RunCheckpoints(accelerator, self.paths, self)
        # The rollout loop it runs is this experiment's interact, looked up on every call: a subclass's override
        # and one assigned to the instance later (a test's recorder) both run.
        self.env_runner = EnvRunner(
            self.config, self.components, accelerator, lambda *args, **kw: self.interact(*args, **kw)
        )
        # Read before the envs are built: the exploration schedule continues from the saved frame count.
        resumed = self.checkpoints.newest_usable() if resume else None
        if resumed is not None:
            self.counters.restore(Progress(total_frames=resumed.progress.total_frames))
        if not self.evaluation_only:
            self.init_dsets()
        env_summary = self.init_envs()
        self.init_model()
        self.precision = session.settle_precision(
            lambda: self.policy, lambda: (self.obs_space, self.rl2_space, self.action_space)
        )
        if resumed is not None:
            # Before the run folder is written (config.resolved.json, metrics): a state that does not fit this
            # model fails here and leaves the run as it was.
            load_resumed_state(self, resumed)
        self.init_checkpoints()
        self.init_logger()
        if resumed is not None:
            finish_resume(self, resumed)
        self._started = True
        if self.config.logging.verbose and accelerator.is_main_process:
            self.summary(env_summary)
        if accelerator.is_main_process:
            self.reports.started()

    def init_dsets(self) -> RLDataset:
        """Configures the dataset (the default disk buffer, with the config's relabeler, if none was given)."""
        self.dataset = setup.prepare_dataset(
            self.dataset, self.config, self.components, self.role, self._accelerator, self.allow_traj_pickles
        )
        return self.dataset

    def init_envs(self) -> str:
        """Reads the spaces from one env and builds this process's train and val pools; returns a description."""
        sample_source = self.make_train_env or self.make_val_env or self.make_test_env
        sample_env = (sample_source if callable(sample_source) else next(iter(sample_source)))()  # type: ignore[arg-type]
        # Recorded in the run folder (spaces.json), so that the policy loads later without building an env.
        self.policy_spaces = PolicySpaces.of_env(sample_env)
        self.obs_space, self.action_space = self.policy_spaces.obs_space, self.policy_spaces.action_space
        self.rl2_space = self.policy_spaces.rl2_space
        sample_env.close()
        sched, runner = self.config.schedule, self._runner()
        validates = sched.val_timesteps_per_epoch > 0 and sched.val_interval is not None
        runner.open_pools(
            self.make_train_env,
            self.make_val_env,
            # Remote actors (config `ray`) collect instead of a pool here; None in the default run.
            remote=(lambda: build_collector(self)) if self._collects_this_run else None,
            evaluates=self.role.evaluates and validates and not self.evaluation_only,
            save_dir=self.dataset.save_new_trajs_to if self.dataset is not None else None,
            start_frames=self.total_frames,
        )
        return runner.describe(self.obs_space, self.action_space)

    def init_model(self) -> None:
        """Builds the agent, the optimiser (``init_optimizer``) and the warmup schedule, prepared by accelerate."""
        spaces = {"obs_space": self.obs_space, "rl2_space": self.rl2_space, "action_space": self.action_space}
        agent = self.components.build_agent(**spaces, max_seq_len=self.config.run.max_seq_len)
        warmup, compile_setting = self.config.optim.lr_warmup_steps, self.config.run.compile
        self.learner = Learner.build(self._accelerator, agent, self.init_optimizer, warmup, compile_setting)
        self.counters.reset_updates()

    def init_optimizer(self, policy: torch.nn.Module) -> torch.optim.Optimizer:
        """The optimiser: ``optim.optimizer`` (AdamW or AdamWRel) over the agent's trainable parameters."""
        return default_optimizer(policy, self.config.optim)

    def init_checkpoints(self) -> None:
        """Creates the checkpoint folders."""
        if self._accelerator.is_main_process:
            self.paths.make_dirs()
        self._accelerator.wait_for_everyone()
        self.counters.at_epoch(0)

    def init_logger(self) -> None:
        """Writes config.resolved.json (the learner's or single process's job) and opens the log backends."""
        record = run_record(self.config, self.components, precision=self.precision)
        main = self._accelerator.is_main_process
        if main and not self.evaluation_only and not self.role.only_collects:
            makers = (self.make_train_env, self.make_val_env, self.make_test_env)
            write_run_files(self.paths, record, self.policy_spaces, makers)
        self.reports.open(self.paths.root, record, enabled=main)

    def summary(self, env_summary: str) -> None:
        """Prints the run's key settings."""
        self._say("\n".join(summary_lines(self, env_summary)))

    def interact(
        self,
        envs: Any,
        timesteps: int,
        hidden_state: Any = None,
        render: bool = False,
        save_on_done: bool = False,
        episodes: int | None = None,
        sample: bool = True,
        timestep: Any = None,
        desc: str = "interact",
    ) -> tuple[Any, Any, dict[str, Any]]:
        """Runs the policy in ``envs`` for ``timesteps`` steps (or until ``episodes`` episodes finish); returns
        ``(hidden_state, last_timestep, stats)``: the memory and policy input to continue from, and the pool's
        return/metric histories for this interaction."""
        device = self._accelerator.device
        overridden = type(self).on_interact_step is not Experiment.on_interact_step  # the no-op costs no call
        on_step = step_observer(self.on_interact_step if overridden else None, self.hook_view)
        with torch_threads_while(self.config.rollout.policy_threads):
            rollout = run_policy(
                cast(RolloutPolicy, self.policy),
                envs,
                timesteps,
                device=device,
                caster=self.caster,
                hidden_state=hidden_state,
                timestep=timestep,
                sample=sample,
                episodes=episodes,
                save_on_done=save_on_done,
                render=render,
                progress=self._bars_here,
                desc=desc,
                should_stop=self._stop_now,
                compile=compile_wanted(self.config.run.compile, device, "rollout"),
                on_step=on_step,
            )
        return rollout.hidden_state, rollout.timestep, rollout.stats

    def on_interact_step(self, obs: dict[str, Any], time_idx: Any) -> None:
        """A no-op called before every action of :meth:`interact` (collection, validation, test) with what the
        ``amago_on_interact_step`` hook gets: override it to change agent state between steps (``time_idx == 0``:
        rows whose episode begins). AMAGO's took ``obs`` alone. Ray actors build this class: there, only the hook."""

    def collect_new_training_data(self) -> None:
        """Steps the train envs ``train_timesteps_per_epoch`` times (they and the policy's memory persist across
        epochs); finished trajectories go to the buffer. A remote ``collector`` collects instead."""
        timesteps = self.config.schedule.train_timesteps_per_epoch
        if (gathered := self._runner().collect_gathered(self.epoch, timesteps, self.policy)) is not None:
            frames, metrics = gathered
            self.counters.count_frames(frames)
            if metrics:  # the returns of the train episodes that finished this epoch
                self.reports.keep(metrics, "train")

    def evaluate_val(self) -> dict[str, float] | None:
        """Evaluates the policy on the val envs (fresh episodes and memory); logs under ``val/``."""
        timesteps = self.config.schedule.val_timesteps_per_epoch
        metrics = self._runner().validate(timesteps, self.policy, self.epoch)
        if metrics is None:
            return None
        self.reports.evaluated("val", metrics)
        # Inside learn() the epoch's table shows it; a direct call says it in one line.
        if self._verbose_here and not self.reports.displaying and AVERAGE_RETURN_KEY in metrics:
            self._say(f"epoch {self.epoch}: val {AVERAGE_RETURN_KEY} = {metrics[AVERAGE_RETURN_KEY]:.3f}")
        return metrics

    def evaluate_test(
        self,
        make_test_env: EnvMakers,
        timesteps: int,
        render: bool = False,
        save_trajs_to: str | Path | None = None,
        episodes: int | None = None,
        wrap_test_makers: MakersWrapper | None = None,
        section: str = "test",
    ) -> dict[str, float]:
        """One-off evaluation on new envs (:meth:`EnvRunner.test`); logs under ``section/`` and returns this
        process's metrics.

        ``section`` is ``test`` for the run's test split (``amago eval --tasks unseen`` logs ``test-unseen``, so
        that a pass on other tasks never passes for the run's test result). ``wrap_test_makers`` changes the test
        env makers in the main process only (one process records env 0's episodes with it).
        """
        wrap = wrap_test_makers if self._accelerator.is_main_process else None
        save_to = Path(save_trajs_to) if save_trajs_to else None
        metrics = self._runner().test(
            make_test_env,
            timesteps,
            render=render,
            save_trajs_to=save_to,
            episodes=episodes,
            wrap_makers=wrap,
        )
        self.reports.evaluated(section, average_over_processes(self._accelerator, metrics))
        return metrics

    def init_dloaders(self) -> DataLoader:
        """A DataLoader over the dataset for one epoch (rebuilt each epoch so workers see new files), yielding
        lists of ``length_group_batches`` ``(Batch, loss_weight)`` pairs of similar lengths (an override may yield
        plain ``Batch`` objects, trained on with weight 1)."""
        if self.dataset is None:
            msg = "no dataset: call start() (or init_dsets()) before init_dloaders()"
            raise RuntimeError(msg)
        pin_memory = self._accelerator.device.type == "cuda"
        self.train_dloader = train_loader(self.dataset, self.config, pin_memory=pin_memory)
        return self.train_dloader

    def compute_loss(self, batch: Batch, log_step: bool) -> tuple[torch.Tensor, dict[str, Any]]:
        """The agent's loss and metrics for one batch (through the accelerate/DDP wrapper)."""
        return self.policy_aclr(batch, log_step=log_step)

    def train_step(self, batch: Batch, log_step: bool, loss_weight: float = 1.0) -> dict[str, Any]:
        """One gradient step (or one accumulation micro-step), the loss scaled by ``loss_weight``."""
        metrics, stepped = self._built(self.learner).step(
            batch.to_torch(self._accelerator.device),
            log_step,
            loss_weight,
            compute_loss=self.compute_loss,
            caster=self.training_caster,
            grad_clip=self.config.optim.grad_clip,
        )
        if stepped:
            self.counters.count_update()
        return metrics

    def learn(self) -> None:
        """The main loop: per epoch, evaluate -> collect -> learn -> checkpoint (see the seeds' docs).

        SIGINT or SIGTERM ends it cleanly: the current step finishes (one process) or the current epoch does
        (several), a training state is saved, and ``stopped_by`` names the signal. A second Ctrl-C aborts.
        ``schedule.max_minutes`` stops it the same way (``stopped_by == "max_minutes"``).

        Raises:
            RunFolderWriteError: a file of the run could not be written (disk full, quota, read-only folder); the
                newest complete checkpoint and the buffer are intact: fix the cause and resume.
        """
        if not self._started:
            msg = "call Experiment.start() before learn()"
            raise RuntimeError(msg)
        if self.evaluation_only:
            msg = "this Experiment was built with evaluation_only=True; build it without to train"
            raise RuntimeError(msg)
        self.counters.start_learning()
        if self._verbose_here:
            processes, collects = self._accelerator.num_processes, self._collects_this_run
            self.reports.start_display(self.config, processes=processes, collects=collects)
        failures = as_write_failures(self.write_failure, self.reports.note_write_failure)
        with stop_on_signals(self.stop.on_signal, announce=self._accelerator.is_main_process), failures:
            try:
                self._loop()
            finally:
                self.counters.stop_learning()  # max_minutes bounds this loop, not the test pass after it
                self.reports.stop_display()

    def _loop(self) -> None:
        epoch = self.epoch
        while epoch < self.config.schedule.epochs and not self.stop.requested:
            self.counters.at_epoch(epoch)
            self.reports.new_epoch()
            self._run_epoch(epoch)
            self.stop.check_time_limit()
            stopping = any(name is not None for name in gather(self._accelerator, self.stopped_by))
            if self.role.learns and (self.config.schedule.rolling_state or stopping):
                self.save_rolling_state()  # a kill from here on loses nothing of this epoch
            self.reports.epoch_ended(epoch)
            epoch += 1
            if stopping:  # every process learned the same answer
                self.stop.request()
        self.counters.at_epoch(epoch)  # the next epoch to run: `epochs` when finished, earlier after a stop

    def _run_epoch(self, epoch: int) -> None:
        sched, role = self.config.schedule, self.role
        dataset = self._built(self.dataset, "the dataset is set up there")
        if (sched.always_load_latest and not role.only_learns) or role.only_collects:
            self.read_latest_policy()
        if sched.val_interval and epoch % sched.val_interval == 0 and sched.val_timesteps_per_epoch > 0:
            self.evaluate_val()
        if role.collects and epoch >= sched.start_collecting_at_epoch and sched.train_timesteps_per_epoch > 0:
            self.collect_new_training_data()
        if dataset_metrics := end_of_collection(dataset, self._accelerator):
            self.reports.keep(dataset_metrics, "dataset")
        if not role.learns:
            return
        if not dataset.ready_for_training and not (role.only_learns and self._wait_until_ready(dataset)):
            if self._verbose_here:
                self._say(f"epoch {epoch}: not training yet ({dataset.not_ready_reason()})")
            return
        if epoch < sched.start_learning_at_epoch:
            return
        if sched.train_batches_per_epoch > 0:
            self._train_epoch()
        self._accelerator.wait_for_everyone()
        if sched.ckpt_interval and epoch % sched.ckpt_interval == 0:
            self.save_checkpoint()
        if sched.always_save_latest or role.only_learns:
            self.write_latest_policy()

    def _train_epoch(self) -> None:
        loader = self._accelerator.prepare(self.init_dloaders())
        self.policy_aclr.train()
        per_epoch, log_every = self.config.schedule.train_batches_per_epoch, self.config.logging.log_interval
        desc, off = f"learn (epoch {self.epoch})", not self._bars_here
        bar = tqdm(total=per_epoch, desc=desc, leave=False, disable=off)
        for i, (batch, weight) in enumerate(weighted_batches(loader)):
            if i >= per_epoch or self._stop_now():
                break
            log_step = (self.epoch * per_epoch + i) % log_every == 0
            metrics = self.train_step(batch, log_step, loss_weight=weight)
            if log_step:
                metrics["Padded Sequence Length"] = batch.seq_len
                self.reports.keep(metrics, "train")
            bar.update(1)
        bar.close()
        del loader
        self.train_dloader = None

    def _wait_until_ready(self, dataset: RLDataset) -> bool:
        stopped = lambda: self.stop.requested or self.stopped_by is not None  # noqa: E731
        return wait_until_ready(dataset, stopped, self._say if self._verbose_here else None)

    def _stop_now(self) -> bool:
        return self.stop.stop_now(self._accelerator.num_processes)

    @property
    def _verbose_here(self) -> bool:
        return self.config.logging.verbose and self._accelerator.is_main_process

    @property
    def _bars_here(self) -> bool:
        # Per-phase bars only on a terminal: in a file they are pages of carriage-return frames (RunProgress's lines).
        return self._verbose_here and stderr_is_tty()

    def _say(self, line: str) -> None:
        tqdm.write(line, file=sys.stderr)

    def log(self, metrics: Mapping[str, Any], key: str) -> dict[str, Any]:
        """Logs ``metrics`` under the ``key`` section with the current x-axes."""
        return self.reports.log(metrics, key)

    def save_checkpoint(self) -> None:
        """Saves this epoch's training state and policy weights, then what retention drops goes
        (:meth:`RunCheckpoints.save_epoch`; RunFolderWriteError: a write failed, earlier ones are intact)."""
        self._checkpoints().save_epoch(self.config.schedule)

    def save_rolling_state(self) -> None:
        """Saves the epoch's training state as the rolling one, what ``--resume`` continues from."""
        self._checkpoints().save_rolling()

    def write_latest_policy(self) -> None:
        """Writes the current weights to ``ckpts/latest``, what collect-only processes read."""
        self._checkpoints().write_latest()

    def read_latest_policy(self) -> None:
        """Loads ``ckpts/latest`` if it exists (says so once when it is not written yet)."""
        if not self._checkpoints().read_latest() and self._verbose_here:
            self._say(f"no latest policy at {self.paths.latest_policy} yet; acting with the current weights")

    def write_failure(self, exc: BaseException) -> RunFolderWriteError | None:
        """``exc`` as the one-line :class:`RunFolderWriteError` when a failed write into the run folder or its
        buffer caused it (itself or a cause); None for any other error."""
        return write_failure_of(exc, self.paths, buffer_dir_of(self.dataset))

    def _checkpoints(self) -> RunCheckpoints:
        return self._built(self.checkpoints, "checkpoints need the accelerator")

    def _runner(self) -> EnvRunner:
        return self._built(self.env_runner, "the env pools are built there")

    def close(self) -> None:
        """Closes envs, remote collectors (their actors stop) and log backends, and releases the run's lock."""
        if self.env_runner is not None:
            self.env_runner.close()
        self.reports.close()
        if self.session is not None:
            self.session.release()  # last: another process may take the run over once its files are closed


__all__ = ["TIME_LIMIT", "Experiment", "NoUsableCheckpointError"]
