"""The state every part of an ``Experiment`` shares: its one config, its parts and progress, its settings read as
attributes.

``Experiment``'s methods come in one class per concern, each building on the one before: ``ExperimentState``
(this) -> ``CheckpointingMixin`` -> ``InteractionMixin`` -> ``SetupMixin`` -> ``Experiment`` (the training loop);
its parts (``env_runner``, ``learner``, ``checkpoints``, ``logger``) are built by ``start()``. Every override
point AMAGO users know stays a method of ``Experiment``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader

from amago_core.config.component import ComponentConfig
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.flat import SLOT_NAMES, flat_names, flat_to_tree, flat_value, with_settings
from amago_core.config.resolve import RunPlan, resolve_config
from amago_core.data.dataset import RLDataset
from amago_core.experiment.checkpoints import CheckpointStore
from amago_core.experiment.components import RunComponents, UserClass
from amago_core.experiment.learner import Learner
from amago_core.experiment.logger import RunLogger
from amago_core.experiment.naming import default_run_name
from amago_core.experiment.pools import EnvMakers, makers_per_actor, suite_makers
from amago_core.experiment.processes import ProcessRole
from amago_core.experiment.progress import RunProgress, stderr_is_tty
from amago_core.experiment.run_dir import RunPaths
from amago_core.plugins.registry import Registries
from amago_core.plugins.registry import registries as installed_registries

TIME_LIMIT = "max_minutes"
"""``Experiment.stopped_by`` when ``schedule.max_minutes`` ended the run (signals give their names, ``SIGINT``)."""

if TYPE_CHECKING:
    import gymnasium


def _is_python_component(value: Any) -> bool:
    """A class or factory given for a component slot (as opposed to a name, a table or a config)."""
    return callable(value) and not isinstance(value, str | Mapping | ComponentConfig)


class ExperimentState:
    """Config, runtime objects and progress of an experiment (see :class:`~amago_core.experiment.Experiment`)."""

    # Built by start() (see SetupMixin); declared here so that every part knows their types.
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
        classes = {
            SLOT_NAMES[k]: settings.pop(k)
            for k in list(settings)
            if k in SLOT_NAMES and _is_python_component(settings[k])
        }
        if isinstance(config, RunPlan):
            config = config.config
        if config is None:
            config = resolve_config(flags=flat_to_tree(settings))
        else:
            base = config if isinstance(config, ExperimentConfig) else ExperimentConfig.model_validate(config)
            config = with_settings(base, settings).resolved()
        if config.run.name is None:
            config = config.model_copy(
                update={"run": config.run.model_copy(update={"name": default_run_name(config)})}
            )
        self.config: ExperimentConfig = config
        self.registries = registries if registries is not None else installed_registries()
        self.classes: dict[str, UserClass] = classes
        self.components = RunComponents.resolve(config, self.registries, classes)
        self.role = ProcessRole.of(config)
        self.evaluation_only = evaluation_only
        self.allow_traj_pickles = (
            config.replay.save_trajs_as == "traj" if allow_traj_pickles is None else bool(allow_traj_pickles)
        )
        """Whether the default buffer reads ``.traj`` files (pickles, through a restricted unpickler): the
        caller's choice in this process (the CLI's ``--allow-traj-pickles``), never a run folder's config."""
        self.dataset = dataset
        self._given_makers = (make_train_env, make_val_env, make_test_env)
        self.make_train_env, self.make_val_env, self.make_test_env = self._env_makers()
        self._check_runnable()
        self.paths = RunPaths(Path(config.run.ckpt_base_dir), str(config.run.name))
        # Progress (AMAGO's attribute names), then what start() builds.
        self.epoch = 0
        self.grad_update_counter = 0
        self.total_frames = 0
        self.frames_by_env_name: dict[str, int] = {}
        self.accelerator: Accelerator | None = None
        self.learner: Learner | None = None
        """The agent, its optimiser and warmup schedule (built by ``init_model``)."""
        self.checkpoints: CheckpointStore | None = None
        self.train_dloader: DataLoader | None = None
        self.logger: RunLogger | None = None
        self._started = False
        self._stop_requested = False
        self.stopped_by: str | None = None
        self._started_at: float | None = None  # when learn() began: schedule.max_minutes counts from here
        """The signal (``SIGINT``/``SIGTERM``) that ended :meth:`learn` early, if one did."""
        self._epoch_metrics: dict[str, Any] = {}
        self._progress: RunProgress | None = None
        """The whole-run progress of :meth:`learn` (main process, verbose), None outside it."""
        self.wall_seconds: float | None = None
        """Seconds the last :meth:`learn` took (None before it ran): the final summary's wall time."""
        self.learn_start_counts: tuple[int, int] = (0, 0)
        """``(total_frames, grad_update_counter)`` when the last :meth:`learn` began (a resumed run starts above
        zero): the final summary's rates count only what this session did."""
        self.best_val: tuple[float, int] | None = None
        """The best val average return of this session and its epoch (None before any validation)."""

    # ---- settings as attributes ----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # Called only for names that are not instance attributes: AMAGO's flat settings read from the config.
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
            if _is_python_component(settings[key]):
                self.classes[SLOT_NAMES[key]] = settings.pop(key)
            else:
                self.classes.pop(SLOT_NAMES[key], None)
        self.config = with_settings(self.config, settings).resolved()
        self.components = RunComponents.resolve(self.config, self.registries, self.classes)
        runner = self.__dict__.get("env_runner")
        if runner is not None:  # a running loop's schedule changed: the runner reads the same config
            runner.config, runner.components = self.config, self.components
        self.role = ProcessRole.of(self.config)
        self.make_train_env, self.make_val_env, self.make_test_env = self._env_makers()

    def _env_makers(self) -> tuple[EnvMakers | None, EnvMakers | None, EnvMakers | None]:
        train, val, test = self._given_makers
        if train is None and val is None and test is None and self.config.env is not None:
            makers = suite_makers(self.registries.env_suites.build(self.config.env))
            return makers["train"], makers["val"], makers["test"]
        val = val if val is not None else train
        return train, val, test if test is not None else val

    @property
    def _collects_this_run(self) -> bool:
        """Whether this process ever steps train envs: its mode collects, collection starts within the run,
        and it is not an evaluation-only experiment."""
        sched = self.config.schedule
        return (
            self.role.collects and sched.start_collecting_at_epoch < sched.epochs and not self.evaluation_only
        )

    def _check_runnable(self) -> None:
        if (
            not self.evaluation_only
            and self.role.learns
            and self.dataset is None
            and self.config.replay.save_trajs_as == "traj"
            and not self.allow_traj_pickles
        ):
            msg = (
                "replay.save_trajs_as = 'traj' writes the buffer as pickles, which this run reads back only when "
                "you allow it: pass --allow-traj-pickles (Experiment(..., allow_traj_pickles=True)) if you trust "
                "the .traj files in its buffer, or set replay.save_trajs_as=npz."
            )
            raise ValueError(msg)
        if self._collects_this_run and self.make_train_env is None:
            msg = (
                "no env to collect from: pass make_train_env (or set env, an env id such as 'tmaze-passive'), or "
                "turn collection off (start_collecting_at_epoch >= epochs)."
            )
            raise ValueError(msg)
        if self.make_val_env is None and self.make_train_env is None:
            msg = "no env at all: pass make_train_env / make_val_env, or set env (an env id, see `amago list envs`)."
            raise ValueError(msg)
        self._check_actor_counts()

    def _check_actor_counts(self) -> None:
        # Expanding the makers per actor only builds partials; done here so that a suite that cannot split its
        # envs among the actors (ale-multigame's games) or a maker list of the wrong length is a config error
        # before any run folder exists, not a failure in start().
        rollout, ray = self.config.rollout, self.config.ray
        if rollout.env_mode == "already_vectorized":
            return  # one maker builds every env of the pool
        train_actors = rollout.parallel_actors
        if ray.actors:
            train_actors = ray.actors * self.config.envs_per_ray_actor
        for maker, n, what in (
            (self.make_train_env, train_actors, "make_train_env"),
            (self.make_val_env, rollout.parallel_actors, "make_val_env"),
        ):
            if maker is not None:
                makers_per_actor(maker, n, what)

    # ---- properties ----------------------------------------------------------------------------------------
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

    @property
    def policy(self) -> torch.nn.Module:
        """The agent, unwrapped from accelerate/DDP (the module ``init_model`` built; DDP shares its parameters).

        Kept as built rather than unwrapped on every use: accelerate's unwrapping asks whether the module was
        compiled, which imports torch's compiler (~1.5 s)."""
        return self._learner().agent

    # AMAGO's attribute names for the learner's parts.
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

    def caster(self) -> AbstractContextManager[Any]:
        """Autocast context of rollouts under mixed precision: on a GPU only (no-op otherwise).

        On a CPU a rollout steps one small batch at a time, and casting it costs more than bf16 matmuls save
        (GRU collection measured 16.3k -> 10.4k env steps/s); the training forward autocasts everywhere
        (:meth:`training_caster`).
        """
        if self.DEVICE.type == "cpu":
            return nullcontext()
        return self.training_caster()

    def training_caster(self) -> AbstractContextManager[Any]:
        """Autocast context of the training forward under mixed precision, on any device (no-op otherwise)."""
        precision = self.config.optim.mixed_precision
        if precision == "no":
            return nullcontext()
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        return torch.autocast(device_type=self.DEVICE.type, dtype=dtype)

    def x_axis_metrics(self) -> dict[str, Any]:
        """The x-axes attached to every record: frames (total and per env name), epoch, gradient steps."""
        axes: dict[str, Any] = {
            "total_frames": self.total_frames,
            "Epoch": self.epoch,
            "gradient_steps": self.grad_update_counter,
        }
        for name, frames in sorted(self.frames_by_env_name.items()):
            axes[f"total_frames-{name}"] = frames
        return axes

    def log(self, metrics: Mapping[str, Any], key: str) -> dict[str, Any]:
        """Logs ``metrics`` under the ``key`` section with the current x-axes."""
        if self.logger is None:
            return {}
        return self.logger.log(metrics, key, self.x_axis_metrics())

    @property
    def _verbose_here(self) -> bool:
        return self.config.logging.verbose and self._accelerator.is_main_process

    @property
    def _bars_here(self) -> bool:
        """Per-phase tqdm bars: verbose, main process, and stderr a terminal (in a file they would be pages of
        carriage-return frames; :class:`~amago_core.experiment.progress.RunProgress` writes lines there)."""
        return self._verbose_here and stderr_is_tty()

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

    def _dataset(self) -> RLDataset:
        if self.dataset is None:
            msg = "no dataset: call start() before learn()"
            raise RuntimeError(msg)
        return self.dataset

    def _store(self) -> CheckpointStore:
        if self.checkpoints is None:
            msg = "call Experiment.start() first: checkpoints need the accelerator"
            raise RuntimeError(msg)
        return self.checkpoints
