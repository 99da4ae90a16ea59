"""``Experiment``: builds, trains and evaluates an agent (the seeds' Experiment API); the training loop lives here.

One process (or each of several under ``accelerate launch``) alternates: evaluate -> collect -> learn ->
checkpoint, epoch after epoch. Collect-only and learn-only processes share the buffer folder and the latest
policy file instead (``run.mode``). Settings live in one :class:`~amago_core.config.experiment.ExperimentConfig`;
an ``Experiment`` holds it plus what only exists at run time (the dataset, env makers, Python component classes).

It is composed of parts it owns, each with one job and a public interface, built by :meth:`Experiment.start`:

- ``accelerator``: accelerate's, for processes, devices and mixed precision;
- ``env_runner``: an :class:`~amago_core.experiment.env_runner.EnvRunner` (the env pools, the policy's memory in
  them, the remote collector);
- ``learner``: a :class:`~amago_core.experiment.learner.Learner` (the model, its optimiser and schedule, the
  gradient step);
- ``checkpoints``: a :class:`~amago_core.experiment.run_checkpoints.RunCheckpoints` (saving with retention,
  loading, resuming);
- ``logger``: a :class:`~amago_core.experiment.logger.RunLogger` (every log backend).

The class itself keeps the progress counters, the loop (``learn -> _loop -> _run_epoch -> _train_epoch``) and
AMAGO's override points (``init_*``, ``interact``, ``compute_loss``, ``train_step``, ``evaluate_*``,
``save_checkpoint``...), which hand the parts what they need; the parts are handed the overridable methods in turn
(the runner runs ``interact``, the learner minimises ``compute_loss``), so a subclass's override is what runs.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from accelerate import Accelerator
from accelerate.utils import broadcast_object_list, set_seed
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from amago_core.config.components import RunComponents, UserClass
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.flat import SLOT_NAMES, flat_names, flat_value, with_settings
from amago_core.config.resolve import RunPlan
from amago_core.config.task_split import write_task_split
from amago_core.data.batch import Batch
from amago_core.data.dataset import RLDataset
from amago_core.experiment import precision_probe
from amago_core.experiment.acting import run_policy
from amago_core.experiment.agent_api import ReloadAware, RolloutPolicy, Trainable
from amago_core.experiment.checkpoints import Progress, TrainingState
from amago_core.experiment.collectors import Collector, build_collector
from amago_core.experiment.env_runner import EnvRunner
from amago_core.experiment.fast_torch import compile_wanted, skip_dynamo_import, untraced_adamw
from amago_core.experiment.hardware import PrecisionChoice
from amago_core.experiment.hook_view import HookView
from amago_core.experiment.learner import Learner
from amago_core.experiment.logger import RunLogger
from amago_core.experiment.metrics import AVERAGE_RETURN_KEY, WALL_TIME_KEY, train_return_metrics
from amago_core.experiment.pools import EnvMakers, RolePool
from amago_core.experiment.processes import ProcessRole, average_over_processes, gather, torch_threads_while
from amago_core.experiment.progress import EpochReport, RunProgress, stderr_is_tty
from amago_core.experiment.provenance import run_record, summary_lines
from amago_core.experiment.resume import finish_resume, load_resumed_state
from amago_core.experiment.run_checkpoints import NoUsableCheckpointError, RunCheckpoints
from amago_core.experiment.run_dir import (
    RunFolderWriteError,
    RunPaths,
    atomic_write_json,
    describe_write_failure,
    find_write_failure,
)
from amago_core.experiment.run_inputs import (
    check_runnable,
    collects_this_run,
    env_makers,
    experiment_config,
    is_python_component,
    registries_of,
    run_components,
    take_component_classes,
)
from amago_core.experiment.run_lock import RunLock, hold_run
from amago_core.experiment.safe_state import DamagedStateError
from amago_core.experiment.setup import (
    choose_run_precision,
    configure_dataset,
    configure_torch,
    default_dataset,
    folders_start_may_create,
    open_accelerator,
    recorded_precision_choice,
    remove_empty_dirs,
    with_agreed_seed,
)
from amago_core.experiment.shared_run import agree_on_config, check_shared_folders
from amago_core.experiment.signals import TIME_LIMIT, stop_on_signals
from amago_core.experiment.training import train_loader, weighted_batches
from amago_core.experiment.video import VideoRequest
from amago_core.plugins.registry import Registries
from amago_core.rollout.spaces import PolicySpaces

if TYPE_CHECKING:
    import gymnasium


class Experiment:
    """Build, train, and evaluate an agent.

    Give the settings as AMAGO's flat keyword arguments (``Experiment(run_name=..., max_seq_len=...,
    learning_rate=3e-4, traj_encoder_type="mamba", make_train_env=...)``), as a plan or validated ``config``, or
    both (keywords win). Every setting, its default and its meaning live in ``ExperimentConfig``; the keyword
    names map onto it through one table (``amago_core.config.flat``), so ``Experiment(learning_rate=3e-4)`` and
    ``amago run -o optim.learning_rate=3e-4`` run the same experiment. Read settings through ``experiment.config``
    (AMAGO's flat attribute names, ``experiment.batch_size``, still read at run time); change them through
    :meth:`apply_settings` before :meth:`start`, never by assignment (``experiment.epochs = 5`` is refused).
    Component slots (``tstep_encoder_type``, ``traj_encoder_type``, ``agent_type``, ``exploration_wrapper_type``)
    also take classes, as in AMAGO.

    Call :meth:`start`, then :meth:`learn`. Override points: ``init_dsets``, ``init_envs``, ``init_model``,
    ``init_optimizer``, ``init_dloaders``, ``compute_loss``, ``train_step``, ``interact``,
    ``collect_new_training_data``, ``evaluate_val``, ``evaluate_test``.

    Args:
        config: a plan (``plan_run``; built from its resolved components), a validated config or its mapping;
            None: planned from the keywords like the CLI does (suite preset under them, ``AMAGO_*`` variables).
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

    # Read from one env by init_envs (AMAGO's attribute names).
    obs_space: gymnasium.spaces.Space[Any]
    action_space: gymnasium.spaces.Space[Any]
    rl2_space: gymnasium.spaces.Box

    def __init__(
        self,
        config: RunPlan | ExperimentConfig | Mapping[str, Any] | None = None,
        *,
        dataset: RLDataset | None = None,
        make_train_env: EnvMakers | None = None,
        make_val_env: EnvMakers | None = None,
        make_test_env: EnvMakers | None = None,
        registries: Registries | None = None,
        evaluation_only: bool = False,
        allow_traj_pickles: bool | None = None,
        **settings: Any,
    ) -> None:
        self.classes: dict[str, UserClass] = take_component_classes(settings)
        self.registries = registries_of(config, registries)
        """Where components are looked up, when validating the settings and when building."""
        self.config: ExperimentConfig = experiment_config(config, settings, self.registries)
        self.components = run_components(config, settings, self.classes, self.registries, self.config)
        self.role = ProcessRole.of(self.config)
        self.evaluation_only = evaluation_only
        self.allow_traj_pickles = (
            self.config.replay.save_trajs_as == "traj"
            if allow_traj_pickles is None
            else bool(allow_traj_pickles)
        )
        """Whether the default buffer reads ``.traj`` files (pickles, through a restricted unpickler): the
        caller's choice in this process (the CLI's ``--allow-traj-pickles``), never a run folder's config."""
        self.dataset = dataset
        self._given_makers = (make_train_env, make_val_env, make_test_env)
        self.make_train_env, self.make_val_env, self.make_test_env = env_makers(
            self._given_makers, self.config, self.registries
        )
        check_runnable(
            self.config,
            (self.make_train_env, self.make_val_env, self.make_test_env),
            collects=self._collects_this_run,
            learns_from_default_buffer=not evaluation_only and self.role.learns and dataset is None,
            allow_traj_pickles=self.allow_traj_pickles,
        )
        self.paths = RunPaths(Path(self.config.run.ckpt_base_dir), str(self.config.run.name))
        # Progress (AMAGO's attribute names).
        self.epoch = 0
        self.grad_update_counter = 0
        self.total_frames = 0
        self.frames_by_env_name: dict[str, int] = {}
        # The parts, built by start().
        self.accelerator: Accelerator | None = None
        self.env_runner: EnvRunner | None = None
        """This process's env pools and remote collector."""
        self.learner: Learner | None = None
        """The agent, its optimiser and warmup schedule (built by ``init_model``)."""
        self.checkpoints: RunCheckpoints | None = None
        self.logger: RunLogger | None = None
        self.train_dloader: DataLoader | None = None
        self.policy_spaces: PolicySpaces | None = None
        """The spaces ``init_envs`` read (recorded as ``spaces.json``); None when an override set them itself."""
        self.precision: PrecisionChoice | None = None
        """The precision ``optim.mixed_precision`` resolved to at start for the update and the rollouts, and why
        (recorded in the provenance; the config keeps what was asked for)."""
        self._run_lock: RunLock | None = None
        self._started = False
        self._write_failed = False
        # Stopping: a signal or the time limit (stopped_by), or request_stop().
        self._stop_requested = False
        self.stopped_by: str | None = None
        """The signal (``SIGINT``/``SIGTERM``) or :data:`TIME_LIMIT` that ended :meth:`learn` early, if any."""
        self._started_at: float | None = None  # when learn() began: schedule.max_minutes counts from here
        self._epoch_metrics: dict[str, Any] = {}
        self._progress: RunProgress | None = None
        """The whole-run progress of :meth:`learn` (main process, verbose), None outside it."""
        self.wall_seconds: float | None = None
        """Seconds the last :meth:`learn` took (None before it ran): the final summary's wall time."""
        self._wall_seconds_done = 0.0
        """Seconds :meth:`learn` ran before its current call: earlier calls, and the sessions before a resume (read
        from the training state, so the records' wall time continues where the checkpoint left it)."""
        self._wall_clock_since: float | None = None
        """When the current :meth:`learn` began (``time.monotonic``); None outside it."""
        self.learn_start_counts: tuple[int, int] = (0, 0)
        """``(total_frames, grad_update_counter)`` when the last :meth:`learn` began (a resumed run starts above
        zero): the final summary's rates count only what this session did."""
        self.best_val: tuple[float, int] | None = None
        """The best val average return of this session and its epoch (None before any validation)."""
        self.hook_view = HookView(self)  # what the experiment hooks receive (``amago_core.hooks.RunView``)

    # ---- settings ------------------------------------------------------------------------------------------
    if not TYPE_CHECKING:  # to a type checker a misspelt attribute is an error, not Any

        def __getattr__(self, name: str) -> Any:
            # Called only for names that are not instance attributes: AMAGO's flat settings, read from the config.
            config = self.__dict__.get("config")
            if config is None or name not in flat_names():
                msg = f"{type(self).__name__!r} object has no attribute {name!r}"
                raise AttributeError(msg)
            slot = SLOT_NAMES.get(name)
            if slot is not None and slot in self.__dict__.get("classes", {}):
                return self.classes[slot]
            return flat_value(config, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if "config" in self.__dict__ and name in flat_names():
            # A setting written as an attribute used to re-validate the whole config and rebuild every
            # component on each write, and a misspelt one silently made a new attribute: settings are given once.
            msg = (
                f"experiment.{name} = ... does not change a setting; pass {name}=... to Experiment(...), or call "
                f"experiment.apply_settings({name}=...) before start()"
            )
            raise AttributeError(msg)
        object.__setattr__(self, name, value)

    def apply_settings(self, **settings: Any) -> None:
        """Changes settings by their flat names, validated like the constructor's (before :meth:`start` to
        affect what it builds; ``epochs`` and the schedule also take effect in a running loop)."""
        for key in [k for k in settings if k in SLOT_NAMES]:
            if is_python_component(settings[key]):
                self.classes[SLOT_NAMES[key]] = settings.pop(key)
            else:
                self.classes.pop(SLOT_NAMES[key], None)
        self.config = with_settings(self.config, settings, registries=self.registries).resolved(
            self.registries
        )
        self.components = RunComponents.resolve(self.config, self.registries, self.classes)
        if self.env_runner is not None:  # a running loop's schedule changed: the runner reads the same config
            self.env_runner.config, self.env_runner.components = self.config, self.components
        self.role = ProcessRole.of(self.config)
        self.make_train_env, self.make_val_env, self.make_test_env = env_makers(
            self._given_makers, self.config, self.registries
        )

    @property
    def _collects_this_run(self) -> bool:
        return collects_this_run(self.config, self.role, self.evaluation_only)

    # ---- the parts, and AMAGO's names for what they hold -----------------------------------------------------
    @property
    def _accelerator(self) -> Accelerator:
        if self.accelerator is None:
            msg = "call Experiment.start() first: the accelerator, envs and model are built there"
            raise RuntimeError(msg)
        return self.accelerator

    def _learner(self) -> Learner:
        if self.learner is None:
            msg = "call Experiment.start() first: the agent is built there"
            raise RuntimeError(msg)
        return self.learner

    def _runner(self) -> EnvRunner:
        if self.env_runner is None:
            msg = "call Experiment.start() first: the env pools are built there"
            raise RuntimeError(msg)
        return self.env_runner

    def _checkpoints(self) -> RunCheckpoints:
        if self.checkpoints is None:
            msg = "call Experiment.start() first: checkpoints need the accelerator"
            raise RuntimeError(msg)
        return self.checkpoints

    def _dataset(self) -> RLDataset:
        if self.dataset is None:
            msg = "no dataset: call start() before learn()"
            raise RuntimeError(msg)
        return self.dataset

    @property
    def policy(self) -> torch.nn.Module:
        """The agent, unwrapped from accelerate/DDP (the module ``init_model`` built; DDP shares its parameters).

        Kept as built rather than unwrapped on every use: accelerate's unwrapping asks whether the module was
        compiled, which imports torch's compiler (~1.5 s)."""
        return self._learner().agent

    @property
    def policy_aclr(self) -> torch.nn.Module:
        """The agent as accelerate prepared it (DDP-wrapped when several processes train)."""
        return self._learner().prepared

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The optimiser (``init_optimizer``'s, as accelerate prepared it)."""
        return self._learner().optimizer

    @property
    def lr_schedule(self) -> torch.optim.lr_scheduler.LRScheduler:
        """The learning-rate warmup schedule."""
        return self._learner().lr_schedule

    @property
    def DEVICE(self) -> torch.device:
        """The device this process runs on."""
        return self._accelerator.device

    @property
    def train_envs(self) -> RolePool | None:
        """This process's train pool (None: not collecting here, or before ``start()``)."""
        return self.env_runner.train_envs if self.env_runner is not None else None

    @property
    def val_envs(self) -> RolePool | None:
        """This process's val pool (None: not evaluating here, or before ``start()``)."""
        return self.env_runner.val_envs if self.env_runner is not None else None

    @property
    def hidden_state(self) -> Any:
        """The policy's memory in the train pool."""
        return self.env_runner.hidden_state if self.env_runner is not None else None

    @property
    def collector(self) -> Collector | None:
        """The remote collector (``ray.actors > 0``) that collects instead of a train pool."""
        return self.env_runner.collector if self.env_runner is not None else None

    def caster(self) -> AbstractContextManager[Any]:
        """Autocast context of rollouts: the precision the start chose for acting (no-op in fp32).

        Explicit bf16/fp16 acts in it on a GPU and in fp32 on a CPU, where a rollout steps one small batch at a
        time and the casts cost more than the reduced-precision matmuls save; ``auto`` acts in bf16 only where the
        start measured a bf16 policy step faster (``experiment.hardware``).
        """
        return self._autocast(self.precision.rollout if self.precision is not None else "no")

    def training_caster(self) -> AbstractContextManager[Any]:
        """Autocast context of the training forward: the precision the start chose for the update (no-op in fp32,
        and before ``start()`` resolved ``auto``)."""
        if self.precision is not None:
            return self._autocast(self.precision.used)
        return self._autocast(self.config.optim.mixed_precision)

    def _autocast(self, precision: str) -> AbstractContextManager[Any]:
        return precision_probe.autocast_for(self.DEVICE.type, precision)

    # ---- setup (AMAGO's start order) -----------------------------------------------------------------------
    def start(self, resume: bool = False) -> None:
        """Builds everything (dataset, envs, model, checkpoints, logger); call before :meth:`learn`.

        Args:
            resume: continue from the run folder's newest usable training state (``amago run --resume``): the
                model, optimiser, schedule, random streams and counters, the exploration schedule where it
                left off, and ``metrics.jsonl`` without the records of work that is redone. Without a saved
                state, the run starts from scratch.
        """
        # A broken plugin fails here, in one line, before anything is created on disk.
        self.components.load_factories()
        existed = {path for path in folders_start_may_create(self.config, self.paths) if path.exists()}
        try:
            self._start(resume)
        except BaseException:
            self.close()
            # Leave no empty run folder behind (files, if any were written, are kept).
            for folder in folders_start_may_create(self.config, self.paths):
                if folder not in existed:
                    remove_empty_dirs(folder)
            raise

    def _start(self, resume: bool) -> None:
        # The config (and so the record) keeps what was asked for; the choice, which `auto` on native bf16 settles
        # once the model exists, goes to the casters, the provenance and the summary.
        self.precision = choose_run_precision(self.config, self.paths, resume=resume)
        before = recorded_precision_choice(self.paths) if resume else None
        self.accelerator = accelerator = open_accelerator(self.config, self.precision.used)
        warning = self.precision.warning()
        # Only the training forward is cast on a CPU: a process that does not train pays nothing for it.
        trains = not (self.evaluation_only or self.role.only_collects)
        if warning is not None and trains and accelerator.is_local_main_process:
            sys.stderr.write(f"amago: warning: {warning}\n")
        self.config = with_agreed_seed(self.config, accelerator)
        seed = cast(int, self.config.run.seed)
        if accelerator.num_processes > 1:
            self._agree_on_run()
        set_seed(seed + accelerator.process_index)
        configure_torch(self.config, accelerator)
        # One process writes a run at a time, and a fresh run never mixes into an old one: checked before any
        # file of the run is written (the lock is released in close()).
        self._run_lock = hold_run(
            self.paths, accelerator, self.role, resume=resume, evaluation_only=self.evaluation_only
        )
        self.checkpoints = RunCheckpoints(accelerator, self.paths, self._buffer_dir)
        # The rollout loop it runs is this experiment's interact, looked up on every call: a subclass's override
        # and one assigned to the instance later (a test's recorder) both run.
        self.env_runner = EnvRunner(
            self.config, self.components, accelerator, lambda *args, **kw: self.interact(*args, **kw)
        )
        # Read before the envs are built: the exploration schedule continues from the saved frame count.
        resumed = self.checkpoints.newest_usable() if resume else None
        if resumed is not None:
            self.total_frames = resumed.progress.total_frames
        if not self.evaluation_only:
            self.init_dsets()
        env_summary = self.init_envs()
        self.init_model()
        if self.precision.pending:
            self.precision = self._timed_precision(self.precision)
        note = self.precision.resume_note(before)
        if note is not None and accelerator.is_local_main_process:
            sys.stderr.write(f"amago: note: {note}\n")
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

    def _timed_precision(self, choice: PrecisionChoice) -> PrecisionChoice:
        """``auto`` on native bf16: each phase in the precision an update and a policy step of this model measured
        faster in (the main process measures; every process takes its decision)."""
        if self.obs_space is None or self.rl2_space is None or self.action_space is None:
            msg = "the precision is timed on the run's model: call init_envs() and init_model() first."
            raise RuntimeError(msg)
        decided: list[PrecisionChoice | None] = [None]
        if self._accelerator.is_main_process:
            times = precision_probe.measure_phases(
                self.policy,
                obs_space=self.obs_space,
                rl2_space=self.rl2_space,
                action_space=self.action_space,
                batch_size=self.config.optim.batch_size,
                seq_len=self.config.run.max_seq_len,
                acting_rows=self.config.rollout.parallel_actors,
                device=self.DEVICE,
                policy_threads=self.config.rollout.policy_threads,
                time_update=not (self.evaluation_only or self.role.only_collects),
            )
            decided = [choice.decided(times)]
        if self._accelerator.num_processes > 1:
            broadcast_object_list(decided)
        return cast(PrecisionChoice, decided[0])

    def _agree_on_run(self) -> None:
        """Several processes: one config (the main process's run name) and run folders they all share."""
        self.config = agree_on_config(self._accelerator, self.config)
        self.paths = RunPaths(Path(self.config.run.ckpt_base_dir), str(self.config.run.name))
        folders = folders_start_may_create(self.config, self.paths)
        if self.dataset is not None or self.evaluation_only:
            folders = folders[:1]  # no default buffer is built: only the run folder is written
        check_shared_folders(self._accelerator, list(dict.fromkeys(folders)))

    def init_dsets(self) -> RLDataset:
        """Configures the dataset (creating the default disk buffer, with the config's relabeler, if none was
        given)."""
        if self.dataset is None:
            self.dataset = default_dataset(
                self.config,
                self.components,
                self._accelerator.process_index,
                allow_traj_pickles=self.allow_traj_pickles,
            )
        elif self.components.relabeler is not None:
            msg = (
                f"replay.relabeler is {self.components.relabeler.name!r}, but this run was given its own dataset, "
                "which the relabeler cannot reach; pass the relabeler to that dataset "
                "(DiskTrajDataset(..., relabeler=...)) or unset replay.relabeler."
            )
            raise ValueError(msg)
        configure_dataset(self.dataset, self.config, self.role, self._accelerator)
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
        if self._collects_this_run and self.make_train_env is not None:
            # Remote actors (config `ray`) collect instead of a pool here; None in the default run.
            runner.collector = build_collector(self)
            if runner.collector is None:
                save_dir = self.dataset.save_new_trajs_to if self.dataset is not None else None
                runner.open_train_pool(self.make_train_env, save_dir, start_frames=self.total_frames)
        evaluates = (
            self.role.evaluates and sched.val_timesteps_per_epoch > 0 and sched.val_interval is not None
        )
        evaluates = evaluates and not (runner.collector is not None and runner.collector.evaluates)
        if evaluates and self.make_val_env is not None and not self.evaluation_only:
            runner.open_val_pool(self.make_val_env)
        return runner.describe(self.obs_space, self.action_space)

    def init_model(self) -> None:
        """Builds the agent, the optimiser and the warmup schedule, and prepares them with accelerate."""
        agent = self.components.agent.build(
            obs_space=self.obs_space,
            rl2_space=self.rl2_space,
            action_space=self.action_space,
            max_seq_len=self.config.run.max_seq_len,
            tstep_encoder=self.components.tstep_encoder.builder(),
            traj_encoder=self.components.traj_encoder.builder(),
        )
        compile_on = compile_wanted(self.config.run.compile, self.DEVICE, "update")
        if not compile_on:
            skip_dynamo_import()  # nothing compiles: the optimiser need not import torch's compiler (~1.5 s)
        optimizer = self.init_optimizer(agent)
        self.learner = Learner(
            self._accelerator,
            agent,
            optimizer,
            warmup_steps=self.config.optim.lr_warmup_steps,
            compile=compile_on,
        )
        self.grad_update_counter = 0

    def init_optimizer(self, policy: torch.nn.Module) -> torch.optim.Optimizer:
        """The optimiser (override point): ``optim.optimizer`` (AdamW or AdamWRel) over the agent's trainable
        parameters."""
        params = list(policy.trainable_parameters() if isinstance(policy, Trainable) else policy.parameters())
        optim = self.config.optim
        if optim.optimizer == "adamw_rel":
            from amago_core.experiment.optimizers import AdamWRel

            if optim.reset_interval is None:  # the config refuses this; a hand-built config may not have
                msg = "optim.optimizer=adamw_rel needs optim.reset_interval (optimiser steps between resets); set it."
                raise ValueError(msg)
            return AdamWRel(
                params,
                reset_interval=optim.reset_interval,
                lr=optim.learning_rate,
                weight_decay=optim.l2_coeff,
            )
        # AdamW, minus torch's per-step compiler bookkeeping (which imports torch._dynamo: ~1.5 s per process).
        return untraced_adamw(params, lr=optim.learning_rate, weight_decay=optim.l2_coeff)

    def init_checkpoints(self) -> None:
        """Creates the checkpoint folders."""
        if self._accelerator.is_main_process:
            self.paths.make_dirs()
        self._accelerator.wait_for_everyone()
        self.epoch = 0

    def init_logger(self) -> None:
        """Writes config.resolved.json (the learner's or single process's job) and opens the log backends."""
        record = run_record(self.config, self.components, precision=self.precision)
        main = self._accelerator.is_main_process
        if main and not self.evaluation_only and not self.role.only_collects:
            atomic_write_json(self.paths.config, record, root=self.paths.root)
            if self.policy_spaces is not None:  # None: an init_envs override set the spaces itself
                atomic_write_json(self.paths.spaces, self.policy_spaces.to_json(), root=self.paths.root)
            # Which tasks train/val/test draw (task_split.json), so results say whether they are on held-out tasks.
            write_task_split(self.paths.root, (self.make_train_env, self.make_val_env, self.make_test_env))
        self.logger = RunLogger(self.paths.root, record, enabled=main)

    def summary(self, env_summary: str) -> None:
        """Prints the run's key settings."""
        lines = summary_lines(
            self.config,
            self.components,
            run_dir=str(self.paths.root),
            trainable_parameters=sum(p.numel() for p in self.policy.parameters() if p.requires_grad),
            device=str(self.DEVICE),
            processes=self._accelerator.num_processes,
            envs=env_summary,
            data=self.dataset.get_description() if self.dataset is not None else "(evaluation only)",
            precision=self.precision,
        )
        tqdm.write("\n".join(lines), file=sys.stderr)

    # ---- acting: collection and evaluation -----------------------------------------------------------------
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
        """Runs the policy in ``envs`` for ``timesteps`` steps (or until ``episodes`` episodes finish).

        Returns:
            ``(hidden_state, last_timestep, stats)``: the memory and policy input to continue from, and the
            pool's return/metric histories for this interaction.
        """
        with torch_threads_while(self.config.rollout.policy_threads):
            rollout = run_policy(
                cast(RolloutPolicy, self.policy),
                envs,
                timesteps,
                device=self.DEVICE,
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
                compile=compile_wanted(self.config.run.compile, self.DEVICE, "rollout"),
            )
        return rollout.hidden_state, rollout.timestep, rollout.stats

    def collect_new_training_data(self) -> None:
        """Steps the train envs ``train_timesteps_per_epoch`` times; finished trajectories go to the buffer.

        The train envs and the policy's memory persist across epochs (rollouts continue mid-episode). With a
        ``collector`` (remote actors), it collects instead and the trajectories arrive as finished files.
        """
        runner = self._runner()
        collected = runner.collect(self.epoch, self.config.schedule.train_timesteps_per_epoch, self.policy)
        if collected is None:
            return
        if runner.collector is not None:  # one process drives the remote workers: nothing to gather
            self._count_frames([collected.frames_by_env_name])
            return
        # One collective call for both: every process's new frames and its finished episodes' returns.
        parts = gather(self._accelerator, (collected.frames_by_env_name, collected.return_history))
        self._count_frames([frames for frames, _ in parts])
        metrics = train_return_metrics([returns for _, returns in parts])
        if metrics:  # the returns of the train episodes that finished this epoch
            self._log_epoch(metrics, "train")

    def _count_frames(self, parts: list[dict[str, int]]) -> None:
        """Adds env steps by env name (one dict per process) to ``total_frames`` and ``frames_by_env_name``."""
        for by_name in parts:
            self.total_frames += sum(by_name.values())
            for name, count in by_name.items():
                self.frames_by_env_name[name] = self.frames_by_env_name.get(name, 0) + count

    def evaluate_val(self) -> dict[str, float] | None:
        """Evaluates the policy on the val envs (fresh episodes and memory); logs under ``val/``."""
        timesteps = self.config.schedule.val_timesteps_per_epoch
        runner = self._runner()
        if runner.collector is not None and runner.collector.evaluates:
            runner.collector.sync_weights(self.policy, self.epoch)
            remote = runner.collector.evaluate(timesteps)  # the collector's workers hold the val envs
            if remote is None:
                return None
            metrics = remote
        elif runner.val_envs is None:
            return None
        else:
            metrics = average_over_processes(self._accelerator, runner.evaluate(runner.val_envs, timesteps))
        self._on_evaluation("val", metrics)
        # Inside learn() the epoch's table shows it; a direct call says it in one line.
        if self._verbose_here and self._progress is None and AVERAGE_RETURN_KEY in metrics:
            tqdm.write(
                f"epoch {self.epoch}: val {AVERAGE_RETURN_KEY} = {metrics[AVERAGE_RETURN_KEY]:.3f}",
                file=sys.stderr,
            )
        return metrics

    def evaluate_test(
        self,
        make_test_env: EnvMakers,
        timesteps: int,
        render: bool = False,
        save_trajs_to: str | Path | None = None,
        episodes: int | None = None,
        video: VideoRequest | None = None,
        section: str = "test",
    ) -> dict[str, float]:
        """One-off evaluation on new envs; logs under ``section/`` and returns this process's metrics.

        Args:
            make_test_env: one env maker (repeated per actor) or one per actor.
            timesteps: steps per env (fewer when ``episodes`` finish first).
            render: call the pool's ``render()`` after every step, for pools that have one (AMAGO's on-screen
                rendering); to record files, pass ``video``.
            save_trajs_to: write the finished trajectories to this folder.
            episodes: stop once this many episodes finished.
            video: record the first episodes of test env 0 (main process only) as files (``video.written()``
                lists them afterwards), also logged as ``test/videos`` to backends that take videos (wandb).
            section: the records' section: ``test`` for the run's test split; ``amago eval --tasks unseen``
                logs ``test-unseen`` so that a pass on other tasks never passes for the run's test result.
        """
        if not self._accelerator.is_main_process:
            video = None  # one process records
        metrics = self._runner().test(
            make_test_env,
            timesteps,
            render=render,
            save_trajs_to=Path(save_trajs_to) if save_trajs_to else None,
            episodes=episodes,
            video=video,
        )
        self._on_evaluation(section, average_over_processes(self._accelerator, metrics))
        if video is not None and self.logger is not None and (written := video.written()):
            self.logger.log_videos(written, section, self.x_axis_metrics())
        return metrics

    def _on_evaluation(self, split: str, metrics: dict[str, float]) -> None:
        from amago_core.hooks.manager import hook_manager

        self._log_epoch(metrics, split)
        value = metrics.get(AVERAGE_RETURN_KEY)
        if split == "val" and value is not None and (self.best_val is None or value > self.best_val[0]):
            self.best_val = (float(value), self.epoch)
        hook_manager().hook.amago_on_evaluation(experiment=self.hook_view, split=split, metrics=metrics)

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
        self._started_at = self._wall_clock_since = started = time.monotonic()
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
                self._wall_seconds_done = self.training_wall_seconds
                self._wall_clock_since = None
                # max_minutes bounds this loop, not the test pass a budget leaves time for.
                self._started_at = None
                if self._progress is not None:
                    self._progress.close()
                    self._progress = None

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
            self._log_epoch(dataset_metrics, "dataset")
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
                self._log_epoch(metrics, "train")
            bar.update(1)
        bar.close()
        del loader
        self.train_dloader = None

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

    # ---- stopping ------------------------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Ends :meth:`learn` after the current epoch (early stopping from a callback or a subclass)."""
        self._stop_requested = True

    def _on_stop_signal(self, name: str) -> None:
        self.stopped_by = name

    def _stop_now(self) -> bool:
        """True when a stop signal asks the current step to be the last (one process; several processes finish
        the epoch, so that none waits at a barrier for the others)."""
        self._check_time_limit()
        if self.stopped_by == TIME_LIMIT and self._started_at is None:
            return False  # the time limit ended the training loop; the test pass after it runs whole
        return self.stopped_by is not None and self._accelerator.num_processes == 1

    def _check_time_limit(self) -> None:
        """Stops the run like a signal once ``schedule.max_minutes`` of training have passed."""
        limit = self.config.schedule.max_minutes
        if (
            limit is not None
            and self.stopped_by is None
            and self._started_at is not None
            and time.monotonic() - self._started_at >= 60 * limit
        ):
            self.stopped_by = TIME_LIMIT

    def _agree_to_stop(self) -> bool:
        """Whether any process received a stop signal (every process learns the same answer)."""
        return any(name is not None for name in gather(self._accelerator, self.stopped_by))

    # ---- logging -------------------------------------------------------------------------------------------
    @property
    def training_wall_seconds(self) -> float:
        """Seconds :meth:`learn` has run over the whole run, resumes included (the records' wall time).

        Only the training loop counts (with the evaluations inside it), not building envs or the test pass.
        Work redone after a resume is counted once: a resumed run continues from its checkpoint's count, as its
        curves continue from the checkpoint's epoch.
        """
        running = 0.0 if self._wall_clock_since is None else time.monotonic() - self._wall_clock_since
        return self._wall_seconds_done + running

    def x_axis_metrics(self) -> dict[str, Any]:
        """The x-axes attached to every record: frames (total and per env name), epoch, gradient steps, and
        training wall time (:data:`~amago_core.experiment.metrics.WALL_TIME_KEY`)."""
        axes: dict[str, Any] = {
            "total_frames": self.total_frames,
            "Epoch": self.epoch,
            "gradient_steps": self.grad_update_counter,
        }
        if not self.evaluation_only or self._wall_seconds_done:
            # An evaluation has no training clock: its records carry wall time only when it was given one.
            axes[WALL_TIME_KEY] = round(self.training_wall_seconds, 3)
        for name, frames in sorted(self.frames_by_env_name.items()):
            axes[f"total_frames-{name}"] = frames
        return axes

    def log(self, metrics: Mapping[str, Any], key: str) -> dict[str, Any]:
        """Logs ``metrics`` under the ``key`` section with the current x-axes."""
        if self.logger is None:
            return {}
        return self.logger.log(metrics, key, self.x_axis_metrics())

    def _log_epoch(self, metrics: Mapping[str, Any], section: str) -> None:
        """Logs ``metrics`` and keeps them for the epoch's report and hooks (``{section}/{key}``)."""
        self.log(metrics, section)
        self._epoch_metrics.update({f"{section}/{k}": v for k, v in metrics.items()})

    @property
    def _verbose_here(self) -> bool:
        return self.config.logging.verbose and self._accelerator.is_main_process

    @property
    def _bars_here(self) -> bool:
        """Per-phase tqdm bars: verbose, main process, and stderr a terminal (in a file they would be pages of
        carriage-return frames; :class:`~amago_core.experiment.progress.RunProgress` writes lines there)."""
        return self._verbose_here and stderr_is_tty()

    def hooks_epoch_end(self, epoch: int) -> None:
        """Calls every plugin's ``amago_on_epoch_end`` with the epoch's metrics and x-axes."""
        from amago_core.hooks.manager import hook_manager

        metrics = {**self._epoch_metrics, **self.x_axis_metrics()}
        hook_manager().hook.amago_on_epoch_end(experiment=self.hook_view, epoch=epoch, metrics=metrics)

    # ---- checkpoints (AMAGO's names; the part is ``checkpoints``) --------------------------------------------
    def progress(self) -> Progress:
        """How far the run got (what a training state records besides the model and optimiser)."""
        return Progress(
            epoch=self.epoch,
            grad_update_counter=self.grad_update_counter,
            total_frames=self.total_frames,
            frames_by_env_name=dict(self.frames_by_env_name),
            num_processes=self._accelerator.num_processes,
            logger_step=self.logger.step if self.logger is not None else 0,
            wall_seconds=self.training_wall_seconds,
        )

    @property
    def _dataset_rng(self) -> Any:
        return self.dataset.rng if self.dataset is not None else None

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

        target = self._checkpoints().save_epoch(
            self._learner(), self.progress(), self._dataset_rng, self.config.schedule
        )
        hook_manager().hook.amago_on_checkpoint(experiment=self.hook_view, epoch=self.epoch, path=target)

    def save_rolling_state(self) -> None:
        """Saves the training state of the epoch just completed as the rolling one (what ``--resume`` continues
        from), then removes the previous rolling state.

        Raises:
            RunFolderWriteError: the write failed; the previous rolling state is intact.
        """
        self._checkpoints().save_rolling(self._learner(), self.progress(), self._dataset_rng)

    def load_checkpoint(self, epoch: int, resume_training_state: bool = True) -> None:
        """Loads the checkpoint of ``epoch``: the whole training state, or only the policy weights."""
        if resume_training_state:
            self.load_checkpoint_from_path(
                self._checkpoints().state_of_epoch(epoch), is_accelerate_state=True
            )
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
        checkpoints = self._checkpoints()
        if is_accelerate_state:
            self.load_training_state(checkpoints.read(path))
        else:
            checkpoints.load_weights(self.policy, path)
        if isinstance(self.policy, ReloadAware):
            self.policy.on_checkpoint_loaded(is_accelerate_state)

    def load_training_state(self, state: TrainingState) -> None:
        """Loads a read training state: the learner's model, optimiser and schedule, the random streams, and the
        progress counters (the run continues after ``state.progress.epoch`` once :meth:`learn` resumes).

        Raises:
            DamagedStateError: the model file turned out cut short while loading.
            RuntimeError: the state does not fit this model.
        """
        self._checkpoints().apply(state, self._learner(), self._dataset_rng)
        self.restore_progress(state.progress)
        if self.logger is not None:
            self.logger.step = state.progress.logger_step

    def restore_progress(self, progress: Progress, *, next_epoch: bool = False) -> None:
        """Sets the counters and the training clock from a recorded ``progress``, the one way they are restored
        (a loaded or resumed state, an evaluation at its weights' x-axes); ``next_epoch``: continue after it."""
        self.epoch, self.grad_update_counter = progress.epoch + int(next_epoch), progress.grad_update_counter
        self.total_frames, self.frames_by_env_name = progress.total_frames, dict(progress.frames_by_env_name)
        self._wall_seconds_done = float(progress.wall_seconds)
        if self._wall_clock_since is not None:  # inside learn(): count this session's time from here
            self._wall_clock_since = time.monotonic()

    def resume_latest(self) -> int | None:
        """Loads the newest complete checkpoint and continues after its epoch; returns that epoch (or None).

        A damaged or refused newer checkpoint is skipped with one line. Metrics logged after the loaded epoch
        (work that is now redone) move out of ``metrics.jsonl``, so curves never run backwards. Call it after
        :meth:`start`; ``start(resume=True)`` does the same and also continues the exploration schedule.
        """
        state = self._checkpoints().newest_usable()
        if state is None:
            return None
        try:
            self.load_training_state(state)
        except DamagedStateError as exc:
            raise NoUsableCheckpointError(str(exc)) from exc
        if self.logger is not None:
            self.logger.rollback(after_epoch=state.progress.epoch)
        self.epoch = state.progress.epoch + 1
        return state.progress.epoch

    def write_latest_policy(self) -> None:
        """Writes the current weights to ``ckpts/latest`` (what collect-only processes read).

        Raises:
            RunFolderWriteError: the write failed; the previous file is intact.
        """
        self._checkpoints().write_latest(self.policy)

    def read_latest_policy(self) -> None:
        """Loads ``ckpts/latest`` if it exists (says so once when it is not written yet)."""
        if not self._checkpoints().read_latest(self.policy) and self._verbose_here:
            tqdm.write(
                f"no latest policy at {self.paths.latest_policy} yet; acting with the current weights",
                file=sys.stderr,
            )

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

    def delete_buffer_from_disk(self) -> None:
        """Deletes the replay buffer's FIFO files (main process)."""
        if self._accelerator.is_main_process:
            self._dataset().delete()

    # ---- closing -------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Closes envs, remote collectors (their actors stop) and log backends, and releases the run's lock."""
        if self.env_runner is not None:
            self.env_runner.close()
        if self.logger is not None:
            if self._write_failed:
                # The disk that failed may refuse the metrics file's last flush too; the failure is already
                # being reported, and a second error here would replace it.
                with contextlib.suppress(OSError):
                    self.logger.close()
            else:
                self.logger.close()
        if self._run_lock is not None:
            self._run_lock.release()  # last: another process may take the run over once its files are closed


__all__ = ["TIME_LIMIT", "Experiment", "NoUsableCheckpointError"]
