"""The experiment config tree: one section per concern, component slots validated by their plugins.

Defaults follow AMAGO v3.3's ``Experiment`` (reference §2.1) except where noted. An unset component slot takes
its group's installed default, kept as a *name* until a run resolves it; whatever a user sets is validated at
once, every name looked up in the registries of the validation context (:meth:`ExperimentConfig.validate_with`).
"""

from __future__ import annotations

import contextvars
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Field, ModelWrapValidatorHandler, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from amago_core.config.component import ComponentConfig
from amago_core.config.slots import (
    ComponentSlot,
    EnvSlot,
    RelabelerSlot,
    _or_installed,
    context_registries,
    validation_context,
)
from amago_core.config.strict import StrictModel
from amago_core.plugins.errors import PluginError
from amago_core.plugins.groups import AGENTS, ENV_SUITES, EXPLORATIONS, TRAJ_ENCODERS, TSTEP_ENCODERS
from amago_core.plugins.registry import Registries

SLOTS: dict[str, ComponentSlot] = {
    ENV_SUITES.key: EnvSlot(),
    TSTEP_ENCODERS.key: ComponentSlot(TSTEP_ENCODERS),
    TRAJ_ENCODERS.key: ComponentSlot(TRAJ_ENCODERS),
    AGENTS.key: ComponentSlot(AGENTS),
    EXPLORATIONS.key: ComponentSlot(EXPLORATIONS),
}
"""Fields of ExperimentConfig that hold a component (named by their group's key), with the slot that
validates each."""

SLOT_KEYS = tuple(SLOTS)

TrajEncoderSlot = Annotated[ComponentConfig | str, SLOTS[TRAJ_ENCODERS.key]]
TstepEncoderSlot = Annotated[ComponentConfig | str, SLOTS[TSTEP_ENCODERS.key]]
AgentSlot = Annotated[ComponentConfig | str, SLOTS[AGENTS.key]]
ExplorationSlot = Annotated[ComponentConfig | str, SLOTS[EXPLORATIONS.key]]
EnvSuiteSlot = Annotated[ComponentConfig | str, SLOTS[ENV_SUITES.key]]


def installed_default(slot: str, registries: Registries | None = None) -> str:
    """The name of the component an installed distribution marks as its group's default (``group_default``).

    amago-core names no component itself; a run that leaves a slot unset gets this one.

    Args:
        slot: the slot's key (``traj_encoder``...).
        registries: where to look (default: the process-wide registries).

    Raises:
        amago_core.plugins.PluginError: no installed distribution marks one, or two do.
    """
    return _or_installed(registries)[SLOTS[slot].group].default_name()


_defaults_from: contextvars.ContextVar[Registries | None] = contextvars.ContextVar(
    "amago_defaults_from", default=None
)
"""The registries of the ExperimentConfig being validated now: pydantic passes no validation context to default
factories, so the unset slots' defaults read it from here (set by ``ExperimentConfig._defaults_in_context``)."""


def _default(slot: str) -> str:
    return installed_default(slot, _defaults_from.get())


RUN_NAME_MAX = 128
"""The longest run name (a folder name; most filesystems stop at 255 bytes, and amago adds suffixes to it)."""
_RUN_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{RUN_NAME_MAX - 1}}}")


class RunSection(StrictModel):
    """Naming, where results go, and what kind of process this is."""

    name: str | None = None
    """Run name: names the checkpoint folder, the wandb run and the default buffer. None: derived from the env and time.
    A plain folder name: letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 128 characters."""

    @field_validator("name")
    @classmethod
    def _plain_folder_name(cls, value: str | None) -> str | None:
        # The name becomes a folder under ckpt_base_dir: a path in it (`../x`, `/abs`, `..`) would write
        # elsewhere, and a newline or a 300-character name fails deep inside the filesystem.
        if value is not None and _RUN_NAME.fullmatch(value) is None:
            msg = (
                "must be a plain folder name: letters, digits, '.', '_' and '-', starting with a letter or "
                f"digit, at most {RUN_NAME_MAX} characters"
            )
            if len(value) > RUN_NAME_MAX:
                msg += f" (this one has {len(value)})"
            raise ValueError(msg)
        return value

    ckpt_base_dir: Path = Path("runs")
    """Checkpoints, metrics and plots go to `{ckpt_base_dir}/{name}/`."""
    max_seq_len: int = Field(128, gt=0)
    """Training context in timesteps (windows of up to max_seq_len + 1 observations); also the inference context."""
    seed: int | None = None
    """Seed for python, numpy, torch and the envs (each process and each env pool draws its own stream from it).
    None: a fresh seed drawn when the run starts, recorded in the run's config.resolved.json."""
    deterministic: bool = False
    """Make torch use deterministic kernels (`torch.use_deterministic_algorithms`, cuDNN autotuning off) so that
    GPU runs repeat too, at some speed cost; an op without a deterministic kernel then fails loudly. CPU runs with
    the same seed, config and thread count repeat without it (`sync` envs, one process)."""
    mode: Literal["both", "collect", "learn"] = "both"
    """`both` collects and learns; `collect` only acts and writes the buffer; `learn` only trains from it."""
    torch_threads: int | None = Field(None, gt=0)
    """CPU threads for torch per process. None: half the cores per process (1 on a 2-core machine)."""
    compile: Literal["auto", "on", "off"] = "auto"
    """`torch.compile` the update (the agent's forward and backward) and the rollout policy step. `off`: eager.
    `on`: both compiled; where compilation fails (no C++ compiler, an unsupported op: AMAGO#83) one line says so
    and that part runs eagerly from the failed step on (the step is redone, not lost). `auto`: the update compiled
    on CUDA, everything else eager. Measured on a 2-core CPU (bench/compile_speed.py): compiling costs 5-240 s per
    part in a fresh process, for updates 0.7-1.7x as fast as eager (ff/GRU/Transformer/Mamba), which short CPU runs
    never earn back; ff/GRU/Mamba rollout steps ran 1.3-4.5x faster compiled, but the Transformer's recompiles as
    its KV cache grows (16-28x slower than eager)."""


class RolloutSection(StrictModel):
    """The actors: how many envs, how they run, how they act."""

    parallel_actors: int = Field(12, gt=0)
    """Number of envs stepped together (or the batch size of an already-vectorised env)."""
    env_mode: Literal["sync", "async", "already_vectorized"] = "sync"
    """`sync` steps envs in this process (AMAGO defaults to `async`; on few cores cheap envs are faster in-process), `async` in a process pool, `already_vectorized` for batched (jax-style) envs."""
    async_env_mp_context: Literal["forkserver", "spawn", "fork"] = "forkserver"
    """Start method of the `async` pool's worker processes. forkserver: `fork` copies a parent that already runs
    torch threads (which can deadlock its workers), and `spawn` re-imports everything in every worker. AMAGO's
    None is read as forkserver."""

    @field_validator("async_env_mp_context", mode="before")
    @classmethod
    def _amago_none_is_forkserver(cls, value: object) -> object:
        return "forkserver" if value is None else value

    sample_actions_train: bool = True
    """Sample from the policy while collecting (False: its mode)."""
    sample_actions_val: bool = True
    """Sample from the policy during evaluation (False: its mode)."""
    force_reset_train_envs_every: int | None = Field(None, gt=0)
    """Reset train envs and memory every N epochs (for auto-resetting vectorised envs). None: never."""
    policy_threads: int | None = Field(1, gt=0)
    """CPU threads torch uses while the policy acts (collection and evaluation); updates keep
    `run.torch_threads`. A policy step for one batch of envs is too small to split: on a 2-core CPU it ran
    10-50 % slower with 2 threads than with 1 (bench/update.py --threads 1 2), while updates ran ~2x faster with
    2. None: the same as `run.torch_threads`."""


class ReplaySection(StrictModel):
    """The disk replay buffer and how training windows are sampled from it."""

    dset_root: Path | None = None
    """Buffers live at `{dset_root}/{dset_name}/buffer/{fifo,protected}`. None: run.ckpt_base_dir (the buffer sits in the run folder)."""
    dset_name: str | None = None
    """Buffer name. None: the run name."""
    dset_max_size: int = Field(15_000, gt=0)
    """FIFO capacity in trajectory files; the oldest are deleted past it (protected files never are)."""
    dset_min_size: int = Field(1, ge=0)
    """Training starts once the buffer holds more files than this."""
    traj_save_len: int = Field(10**10, gt=0)
    """Split rollouts into files of about this many timesteps (must be at least max_seq_len)."""
    stagger_traj_file_lengths: bool = True
    """Randomise file lengths by up to max_seq_len around traj_save_len so snippet boundaries don't align."""
    save_trajs_as: Literal["npz", "npz-compressed", "traj"] = "npz"
    """File format of saved trajectories."""
    padded_sampling: Literal["none", "left", "right", "both", "center"] = "none"
    """Where training windows are drawn. `none`: whole windows inside a file, whose first and last steps are then
    seen `max_seq_len` times less often than its middle. `left`/`right`/`both`: windows may also run off the
    start/end (padded, masked) so the edges are seen as often as the middle. `center`: a uniform window centre, the
    window clamped inside the file (never padded): the edges are seen half as often as the middle."""
    has_dset_edit_rights: bool = True
    """Whether this process may delete old FIFO files (False for extra collect-only processes)."""
    relabeler: Annotated[ComponentConfig | str, RelabelerSlot()] | None = None
    """Rewrites each stored trajectory as training loads it (hindsight relabeling): a relabeler name
    (`amago list relabelers`, e.g. `hindsight` for MazeRunner) or a table with `kind` and its options. None: train
    on the trajectories as stored. The files on disk never change."""


class OptimSection(StrictModel):
    """The optimiser and the batch."""

    batch_size: int = Field(24, gt=0)
    """Sequences per batch, per process."""
    batches_per_update: int = Field(1, gt=0)
    """Gradient accumulation: batches per optimiser step."""
    length_group_batches: int = Field(1, gt=0)
    """Sort this many batches' worth of sampled windows by length and train on them as batches of similar
    lengths (1: off). Cuts padding when episodes vary in length; losses are reweighted so each timestep counts
    as before."""
    learning_rate: float = Field(1e-4, gt=0)
    """AdamW learning rate."""
    lr_warmup_steps: int = Field(500, ge=0)
    """Linear warmup steps, then constant."""
    grad_clip: float = Field(1.0, gt=0)
    """Global gradient-norm clip."""
    l2_coeff: float = Field(1e-3, ge=0)
    """AdamW weight decay."""
    mixed_precision: Literal["auto", "no", "fp16", "bf16"] = "auto"
    """Autocast of the networks' forward passes; parameters, the optimiser step and the math on the networks'
    outputs (distributions, PopArt, targets, losses) stay fp32. `auto`: fp32 where the training device has no
    native bf16; where it has (a CUDA GPU with bf16; a CPU with avx512_bf16 or AMX) the start times an update and a
    policy step of the run's model in both precisions and each phase takes bf16 only where it measured faster (the
    start line shows the decision and the times; `AMAGO_AUTO_PRECISION=no|bf16` pins it without measuring). The
    record keeps `auto`, so a resume on another machine resolves it again (and says so when the answer changes).
    `bf16` and `fp16` are used as asked for the update (rollouts in them on a GPU, in fp32 on a CPU; a CPU without
    native support emulates them, tens of times slower, and start says so); `fp16` uses a gradient scaler."""
    optimizer: Literal["adamw", "adamw_rel"] = "adamw"
    """`adamw`: torch's AdamW. `adamw_rel`: AdamW on relative time (AMAGO's `AdamWRel`, Ellis et al. 2024): every
    `reset_interval` optimiser steps Adam's step count returns to 0 (the moments are kept), so each stretch of
    training starts with the bias correction, and the larger steps, of a first update. Both use `learning_rate`
    and `l2_coeff`."""
    reset_interval: int | None = Field(None, gt=0)
    """Optimiser steps between the step-count resets of `adamw_rel` (AMAGO's `AdamWRel.reset_interval`, which has
    no default either). Required with `adamw_rel`, refused with `adamw`. The steps are counted over the whole
    run, resumes included."""

    @model_validator(mode="after")
    def _check_optimizer(self) -> Self:
        if self.optimizer == "adamw_rel" and self.reset_interval is None:
            msg = (
                "optim.reset_interval: optimizer adamw_rel needs the number of optimiser steps between its resets; "
                "set it, e.g. -o optim.reset_interval=1000 (one epoch of schedule.train_batches_per_epoch=1000)."
            )
            raise ValueError(msg)
        if self.optimizer == "adamw" and self.reset_interval is not None:
            msg = (
                f"optim.reset_interval={self.reset_interval} does nothing with optimizer adamw; set "
                "optim.optimizer=adamw_rel to use it, or remove optim.reset_interval."
            )
            raise ValueError(msg)
        return self


class ScheduleSection(StrictModel):
    """How long to run and how each epoch divides between collecting, learning, evaluating, saving."""

    epochs: int = Field(1000, gt=0)
    """Number of epochs."""
    start_learning_at_epoch: int = Field(0, ge=0)
    """Skip gradient updates before this epoch."""
    start_collecting_at_epoch: int = Field(0, ge=0)
    """Skip collection before this epoch (offline first, then online)."""
    train_timesteps_per_epoch: int = Field(1000, ge=0)
    """Env steps per actor per epoch."""
    train_batches_per_epoch: int = Field(1000, ge=0)
    """Gradient updates (batches) per epoch, per process."""
    val_interval: int | None = Field(20, gt=0)
    """Evaluate every N epochs (epoch 0 included). None: never."""
    val_timesteps_per_epoch: int = Field(1_000, ge=0)
    """Env steps per val env per evaluation: long enough for at least one full episode per actor, since only
    finished episodes are scored (env suite presets set it from their episode length)."""
    ckpt_interval: int | None = Field(50, gt=0)
    """Save a full checkpoint (training state and policy weights) every N epochs, epoch 0 included; how many
    are kept is `keep_states` / `keep_policies`. None: save none (the rolling state still makes the run
    resumable)."""
    keep_states: int = Field(2, ge=1)
    """Training states from `ckpt_interval` epochs to keep: the newest N (older ones are deleted once a newer
    one is complete, so a resume always finds one). Bounds a long run's folder; see `keep_state_every`."""
    keep_state_every: int | None = Field(None, gt=0)
    """Also keep, forever, the training state of every epoch that is a multiple of K (a multiple of
    `ckpt_interval` to have any effect). None: only the newest `keep_states`."""
    keep_policies: int | None = Field(20, ge=1)
    """Policy weights from `ckpt_interval` epochs to keep: the newest N (what `amago eval --epoch` can load).
    None: keep all of them (the folder then grows with the run)."""
    keep_policy_every: int | None = Field(None, gt=0)
    """Also keep, forever, the policy weights of every epoch that is a multiple of K: a sparse history of a
    long run at a fraction of the disk. None: only the newest `keep_policies`."""
    rolling_state: bool = True
    """Save the training state after every epoch in `ckpts/latest/state_epoch_{e}` (replacing the previous one),
    so `--resume` continues from the last completed epoch rather than the last `ckpt_interval` one. Costs one
    write of the model and optimiser per epoch."""
    always_save_latest: bool = True
    """Write `ckpts/latest` policy weights every trained epoch (what collect-only processes read)."""
    always_load_latest: bool = False
    """Read `ckpts/latest` at the start of every epoch (for collect-only processes)."""
    max_minutes: float | None = Field(None, gt=0)
    """Wall-time limit of the training loop (from `start()` on, per launch): when it passes, the run stops like
    a Ctrl-C (the current step ends, a checkpoint is saved, `stopped_by` is `max_minutes`), then finishes
    normally. `amago run --budget` sets it; None: no limit."""


class LoggingSection(StrictModel):
    """Where metrics go. A local metrics.jsonl is always written."""

    log_to_wandb: bool = False
    """Also log to Weights & Biases."""
    wandb_project: str | None = None
    """wandb project (env AMAGO_WANDB_PROJECT)."""
    wandb_entity: str | None = None
    """wandb entity (env AMAGO_WANDB_ENTITY)."""
    wandb_group_name: str | None = None
    """wandb group for related runs."""
    verbose: bool = True
    """Progress bars and the run summary."""
    log_interval: int = Field(300, gt=0)
    """Log training metrics every N gradient steps."""
    plot: bool = True
    """Draw learning curves into `plots/` at the end of the run."""


class DistributedSection(StrictModel):
    """Data loading and multi-process settings (DDP itself comes from `accelerate launch`)."""

    dloader_workers: int = Field(0, ge=0)
    """DataLoader worker processes (AMAGO uses 6; 0 loads in the training process, best on few cores)."""


class RaySection(StrictModel):
    """Train collection on Ray actors (the `ray` extra): remote processes, each stepping a pool of envs with a
    copy of the policy, ship finished trajectory files to this process's buffer. 0 actors: Ray is never
    imported."""

    actors: int = Field(0, ge=0)
    """Ray actors that do all train collection; 0 collects in this process (the default)."""
    address: str | None = None
    """The Ray cluster: None starts a local one for this run; `auto` joins the one `ray start` runs on this
    node; or `host:port` of a head node."""
    envs_per_actor: int | None = Field(None, gt=0)
    """Envs each actor steps; None: `rollout.parallel_actors`."""
    cpus_per_actor: float = Field(1.0, gt=0)
    """CPUs Ray reserves per actor when placing it (fractions let more actors share a node's cores)."""
    weight_sync_interval: int = Field(1, gt=0)
    """Epochs between weight broadcasts to the actors (1: they act with the newest weights every epoch)."""
    evaluate: bool = False
    """Run validation on the actors too: each steps `schedule.val_timesteps_per_epoch` in a val pool of its own
    (`envs_per_actor` envs) with the newest weights, and the learner logs the mean of their metrics. False:
    validation runs in this process, as without Ray."""
    max_restarts: int = Field(3, ge=0)
    """Times Ray restarts an actor that died (its unfinished episodes are lost, never written half)."""


class ExperimentConfig(StrictModel):
    """Everything a run needs: the one place each setting, its default, its check and its meaning live.

    Sections group AMAGO's `Experiment` parameters; components are plugin slots. AMAGO's flat keyword
    arguments (`amago.Experiment(learning_rate=3e-4)`) map onto these fields (see `amago.from_amago.flat`).
    """

    run: RunSection = RunSection()
    """Naming, output folder, context length, seed, process mode."""
    env: EnvSuiteSlot | None = None
    """The env: an id such as `tmaze-passive` or a table with `id` (or `kind`/`task`) and the suite's options.
    None: envs come from the Python API's env makers (or, on the command line, the default job)."""
    tstep_encoder: TstepEncoderSlot = Field(
        default_factory=lambda: _default(TSTEP_ENCODERS.key), validate_default=False
    )
    """Timestep encoder: a name or a table with `kind` and its options. Unset: the installed default
    (`amago list tstep-encoders` marks it)."""
    traj_encoder: TrajEncoderSlot = Field(
        default_factory=lambda: _default(TRAJ_ENCODERS.key), validate_default=False
    )
    """Trajectory encoder (the memory): a name or a table with `kind` and its options. Unset: the installed
    default (`amago list traj-encoders` marks it)."""
    agent: AgentSlot = Field(default_factory=lambda: _default(AGENTS.key), validate_default=False)
    """Agent (the learning update): a name or a table with `kind` and its options. Unset: the installed default
    (`amago list agents` marks it)."""
    exploration: ExplorationSlot | None = Field(
        default_factory=lambda: _default(EXPLORATIONS.key), validate_default=False
    )
    """Exploration wrapper on train envs: a name, a table, or null for none. Unset: the installed default
    (`amago list explorations` marks it)."""
    rollout: RolloutSection = RolloutSection()
    """Actors: number of envs, env mode, sampling."""
    replay: ReplaySection = ReplaySection()
    """Replay buffer and window sampling."""
    optim: OptimSection = OptimSection()
    """Optimiser and batch."""
    schedule: ScheduleSection = ScheduleSection()
    """Epochs and what each contains."""
    logging: LoggingSection = LoggingSection()
    """Metrics destinations."""
    distributed: DistributedSection = DistributedSection()
    """Data loading and processes."""
    ray: RaySection = RaySection()
    """Collection on Ray actors (off by default)."""

    @model_validator(mode="wrap")
    @classmethod
    def _defaults_in_context(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        token = _defaults_from.set(context_registries(info.context))
        try:
            return handler(data)
        finally:
            _defaults_from.reset(token)

    @classmethod
    def validate_with(cls, data: Any, registries: Registries | None = None) -> ExperimentConfig:
        """``data`` validated, every name looked up in ``registries`` (default: the process-wide registries).

        Raises:
            pydantic.ValidationError: the config is invalid (located at the bad field).
        """
        return cls.model_validate(data, context=validation_context(registries))

    @model_validator(mode="after")
    def _check_lengths(self) -> ExperimentConfig:
        if self.replay.traj_save_len < self.run.max_seq_len:
            msg = (
                f"replay.traj_save_len ({self.replay.traj_save_len}) must be at least run.max_seq_len "
                f"({self.run.max_seq_len}); raise traj_save_len or lower max_seq_len."
            )
            raise ValueError(msg)
        return self

    @property
    def envs_per_ray_actor(self) -> int:
        """Envs each Ray actor steps: ``ray.envs_per_actor``, or ``rollout.parallel_actors`` when that is unset."""
        return self.ray.envs_per_actor or self.rollout.parallel_actors

    def component(self, key: str, registries: Registries | None = None) -> ComponentConfig | None:
        """The validated config in slot ``key`` (``traj_encoder``...), resolving a default name now in
        ``registries`` (default: the process-wide registries).

        Raises:
            amago_core.plugins.PluginError: the default component is not installed.
        """
        value = getattr(self, key)
        if value is None or isinstance(value, ComponentConfig):
            return value
        try:
            return SLOTS[key].validate(value, registries)
        except PydanticCustomError as exc:
            if isinstance(exc.__cause__, PluginError):  # outside validation, raise the plugin error itself
                raise exc.__cause__ from None
            raise

    def resolved(self, registries: Registries | None = None) -> ExperimentConfig:
        """A copy with every component slot validated into its plugin's Config (defaults included), names looked
        up in ``registries`` (default: the process-wide registries)."""
        return self.model_copy(update={key: self.component(key, registries) for key in SLOT_KEYS})
