"""``Experiment``: builds, trains and evaluates an agent (the seeds' Experiment API, parameter for parameter).

One process (or each of several under ``accelerate launch``) alternates: evaluate -> collect -> learn ->
checkpoint, epoch after epoch. Collect-only and learn-only processes share the buffer folder and the latest
policy file instead (``mode``).
"""

from __future__ import annotations

import functools
import math
import os
import shlex
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs, gather_object, set_seed
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from amago_core.data.batch import Batch, LengthGroupedCollate
from amago_core.data.dataset import RLDataset
from amago_core.data.disk_buffer import DiskTrajDataset
from amago_core.experiment.checkpoints import (
    load_policy_weights,
    read_progress,
    save_policy_weights,
    write_progress,
)
from amago_core.experiment.components import ComponentChoice, ResolvedComponent, resolve_component
from amago_core.experiment.logger import RunLogger
from amago_core.experiment.metrics import AVERAGE_RETURN_KEY, finished_episodes, policy_metrics
from amago_core.experiment.run_dir import RunPaths, atomic_write_json, replace_dir
from amago_core.plugins.groups import AGENTS, EXPLORATIONS, TRAJ_ENCODERS, TSTEP_ENCODERS
from amago_core.rollout import EnvCreator, make_pool

ENV_MODES = ("sync", "async", "already_vectorized")
SAVE_FORMATS = ("npz", "npz-compressed", "traj")
PADDED_SAMPLING = ("none", "left", "right", "both")


def default_torch_threads(num_processes: int = 1) -> int:
    """Half the cores per training process, at least one.

    Small models step one env batch at a time; with OpenMP threads on every core they fight the env code,
    data loading and each other, and a 7 ms policy step was measured taking 200-800 ms on 2 busy cores.
    """
    return max(1, (os.cpu_count() or 1) // (2 * max(num_processes, 1)))


_POOL_ROLES = ("train", "val", "test")


def _weighted_batches(loader: Iterable[Any]) -> Iterable[tuple[Batch, float]]:
    """Flattens a loader's items (``Batch`` or lists of ``(Batch, loss_weight)``) into weighted batches."""
    for item in loader:
        if isinstance(item, Batch):
            yield item, 1.0
            continue
        for pair in item:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Batch)):
                msg = (
                    f"the training DataLoader yielded {type(pair).__name__} inside a {type(item).__name__}; "
                    "init_dloaders must yield Batch objects or lists of (Batch, loss_weight) pairs."
                )
                raise TypeError(msg)
            yield pair[0], float(pair[1])


def _as_list(make_env: Callable[[], Any] | Iterable[Callable[[], Any]], n: int, what: str) -> list[Callable]:
    if callable(make_env):
        return [make_env] * n
    makers = list(make_env)
    if len(makers) != n:
        msg = f"{what} is a list of {len(makers)} env makers but parallel_actors is {n}; give one per actor."
        raise ValueError(msg)
    return makers


@dataclass
class Experiment:
    """Build, train, and evaluate an agent.

    Component types (``tstep_encoder_type``, ``traj_encoder_type``, ``agent_type``,
    ``exploration_wrapper_type``) may be registered names (``"transformer"``), tables with ``kind``,
    configs, or classes, as in AMAGO.

    Call :meth:`start`, then :meth:`learn`. See the field docstrings for every parameter; defaults follow
    AMAGO v3.3 except ``env_mode="sync"`` and ``dloader_workers=0`` (right for cheap envs on few cores).
    """

    # ---- required (AMAGO's order) -------------------------------------------------------------------------
    run_name: str
    """Names the checkpoint folder, the wandb run and the default buffer."""
    ckpt_base_dir: str | Path
    """Checkpoints and logs go to `{ckpt_base_dir}/{run_name}`."""
    max_seq_len: int
    """Training context: windows of up to max_seq_len + 1 observations; also the rollout context."""
    dataset: RLDataset | None = None
    """Where training sequences come from. None: a disk buffer at `{dset_root}/{dset_name}`."""
    tstep_encoder_type: ComponentChoice = "ff"
    """Timestep encoder: a name, a table, a config or a class."""
    traj_encoder_type: ComponentChoice = "transformer"
    """Trajectory encoder (memory): a name, a table, a config or a class."""
    agent_type: ComponentChoice = "agent"
    """Agent (the learning update): a name, a table, a config or a class."""
    val_timesteps_per_epoch: int = 1000
    """Steps per val env per evaluation (enough for at least one episode)."""
    make_train_env: Callable[[], Any] | Sequence[Callable[[], Any]] | None = None
    """Returns an AMAGOEnv; or a list with one maker per actor."""
    make_val_env: Callable[[], Any] | Sequence[Callable[[], Any]] | None = None
    """Like make_train_env, for evaluation (never saved). None: make_train_env."""
    make_test_env: Callable[[], Any] | Sequence[Callable[[], Any]] | None = None
    """Env maker(s) for the final test (held-out tasks where the suite has them). None: make_val_env."""

    # ---- environment ------------------------------------------------------------------------------------
    parallel_actors: int = 12
    """Envs stepped together (the batch size of an already-vectorised env)."""
    env_mode: str = "sync"
    """`sync` (in-process), `async` (process pool) or `already_vectorized`."""
    async_env_mp_context: str | None = None
    """Start method of the async pool (`forkserver`, `spawn`, `fork`). None: forkserver."""
    exploration_wrapper_type: ComponentChoice | None = "egreedy"
    """Exploration on train envs: a name, a table, a config, a class, or None."""
    sample_actions: bool = True
    """Sample from the policy in evaluation (False: its mode)."""
    sample_actions_train: bool = True
    """Sample from the policy while collecting (False: its mode)."""
    force_reset_train_envs_every: int | None = None
    """Reset train envs and memory every N epochs (auto-resetting vectorised envs)."""

    # ---- logging ----------------------------------------------------------------------------------------
    log_to_wandb: bool = False
    """Also log to Weights & Biases."""
    wandb_project: str | None = field(default_factory=lambda: os.environ.get("AMAGO_WANDB_PROJECT"))
    """wandb project (default: AMAGO_WANDB_PROJECT)."""
    wandb_entity: str | None = field(default_factory=lambda: os.environ.get("AMAGO_WANDB_ENTITY"))
    """wandb entity (default: AMAGO_WANDB_ENTITY)."""
    wandb_group_name: str | None = None
    """wandb group."""
    verbose: bool = True
    """Progress bars and the run summary."""
    log_interval: int = 300
    """Log training metrics every N gradient steps."""

    # ---- trajectory files -------------------------------------------------------------------------------
    traj_save_len: int = 10**10
    """Save a file at episode end or after this many steps, whichever comes first."""
    has_dset_edit_rights: bool = True
    """False for collect-only processes (never delete buffer files)."""
    stagger_traj_file_lengths: bool = True
    """Randomise snippet lengths by up to max_seq_len so boundaries don't align."""
    save_trajs_as: str = "npz"
    """`npz`, `npz-compressed` or `traj`."""
    padded_sampling: str = "none"
    """Windows may run off a file's `none`/`left`/`right`/`both` ends (masked)."""
    dloader_workers: int = 0
    """DataLoader worker processes."""

    # ---- learning schedule ------------------------------------------------------------------------------
    epochs: int = 1000
    """Epochs (each: evaluate, collect, learn, checkpoint)."""
    start_learning_at_epoch: int = 0
    """No gradient updates before this epoch."""
    start_collecting_at_epoch: int = 0
    """No collection before this epoch (offline, then online)."""
    train_timesteps_per_epoch: int = 1000
    """Steps per train env per epoch."""
    train_batches_per_epoch: int = 1000
    """Batches per epoch (per process)."""
    val_interval: int | None = 20
    """Evaluate every N epochs (epoch 0 included). None: never."""
    ckpt_interval: int | None = 50
    """Save a full checkpoint every N epochs. None: only `latest`."""
    always_save_latest: bool = True
    """Write the latest policy weights every trained epoch."""
    always_load_latest: bool = False
    """Read the latest policy weights at the start of every epoch."""

    # ---- optimisation -----------------------------------------------------------------------------------
    batch_size: int = 24
    """Sequences per batch, per process."""
    batches_per_update: int = 1
    """Gradient accumulation steps."""
    length_group_batches: int = 1
    """Sort this many batches' worth of sampled windows by length and train on them as that many batches of
    similar lengths (1: off). Cuts the padding of tasks whose episodes vary in length; each batch's loss is
    weighted so every timestep counts as much as without grouping."""
    learning_rate: float = 1e-4
    """AdamW learning rate."""
    critic_loss_weight: float | None = None
    """Weight of the critic loss vs the actor loss (None: the agent's own default, 10 in AMAGO)."""
    lr_warmup_steps: int = 500
    """Linear warmup steps."""
    grad_clip: float = 1.0
    """Global gradient-norm clip."""
    l2_coeff: float = 1e-3
    """AdamW weight decay."""
    mixed_precision: str = "no"
    """accelerate mixed precision: `no`, `fp16`, `bf16`."""

    # ---- amago additions --------------------------------------------------------------------------------
    seed: int | None = None
    """Seed for python, numpy, torch and the envs (None: not seeded)."""
    dset_root: str | Path | None = None
    """Root of the default disk buffer (None: ckpt_base_dir)."""
    dset_name: str | None = None
    """Name of the default disk buffer (None: run_name)."""
    dset_max_size: int = 15_000
    """FIFO capacity (files) of the default disk buffer."""
    dset_min_size: int = 1
    """Files the default buffer needs before training."""
    resolved_config: dict[str, Any] | None = None
    """The config this experiment was built from (written to config.resolved.json)."""
    quiet_warnings: bool = False
    """Silence warnings raised while building envs."""
    record_config: bool = True
    """Write config.resolved.json (False for evaluation runs of an existing run folder)."""
    wait_for_data: bool = False
    """When the dataset is not ready, wait for it (polling) instead of moving on to the next epoch (learn-only processes)."""
    torch_threads: int | None = None
    """CPU threads for torch in this process. None: half the cores per process (1 on a 2-core machine)."""

    def __post_init__(self) -> None:
        problems = []
        if self.max_seq_len < 1:
            problems.append(f"max_seq_len must be >= 1 (got {self.max_seq_len})")
        if self.traj_save_len < self.max_seq_len:
            problems.append(
                f"traj_save_len ({self.traj_save_len}) must be >= max_seq_len ({self.max_seq_len}); raise traj_save_len"
            )
        if self.length_group_batches < 1:
            problems.append(
                f"length_group_batches must be >= 1 (got {self.length_group_batches}; 1 turns grouping off)"
            )
        for name, value, allowed in (
            ("env_mode", self.env_mode, ENV_MODES),
            ("save_trajs_as", self.save_trajs_as, SAVE_FORMATS),
            ("padded_sampling", self.padded_sampling, PADDED_SAMPLING),
            ("mixed_precision", self.mixed_precision, ("no", "fp16", "bf16")),
        ):
            if value not in allowed:
                problems.append(f"{name} must be one of {allowed} (got {value!r})")
        if self.make_train_env is None and self.start_collecting_at_epoch < self.epochs:
            problems.append(
                "make_train_env is required unless collection is off (start_collecting_at_epoch >= epochs)"
            )
        if problems:
            msg = "invalid Experiment: " + "; ".join(problems) + "."
            raise ValueError(msg)
        self.paths = RunPaths(Path(self.ckpt_base_dir), self.run_name)
        self.epoch = 0
        self.grad_update_counter = 0
        self.total_frames = 0
        self.frames_by_env_name: dict[str, int] = {}
        self._started = False
        self._stop_requested = False
        self._epoch_metrics: dict[str, Any] = {}
        self._seeded_pools: set[int] = set()
        self._pool_roles: dict[int, str] = {}

    # =========================================================================================================
    # setup
    # =========================================================================================================
    def start(self) -> None:
        """Builds everything (dataset, envs, model, checkpoints, logger); call before :meth:`learn`."""
        self.accelerator = Accelerator(
            # Without CUDA, `cpu=True` is what lets accelerate see a multi-process launch as MULTI_CPU (gloo)
            # instead of silently running each process alone.
            cpu=not torch.cuda.is_available(),
            gradient_accumulation_steps=self.batches_per_update,
            mixed_precision=self.mixed_precision,
            kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)],
        )
        if self.seed is not None:
            set_seed(self.seed + self.accelerator.process_index)
        threads = self.torch_threads or default_torch_threads(self.accelerator.num_processes)
        if self.DEVICE.type == "cpu" or self.torch_threads:
            torch.set_num_threads(threads)
        self.init_dsets()
        env_summary = self.init_envs()
        self.init_model()
        self.init_checkpoints()
        self.init_logger()
        self._started = True
        if self.verbose and self.accelerator.is_main_process:
            self.summary(env_summary)

    def init_dsets(self) -> RLDataset:
        """Configures the dataset for this experiment (creating the default disk buffer if none was given)."""
        if self.dataset is None:
            self.dataset = DiskTrajDataset(
                dset_root=self.dset_root if self.dset_root is not None else self.ckpt_base_dir,
                dset_name=self.dset_name or self.run_name,
                dset_max_size=self.dset_max_size,
                dset_min_size=self.dset_min_size,
                seed=self.seed,
            )
        # Whole pools of length-grouped batches: the last pool may be used only in part.
        pools = math.ceil(self.train_batches_per_epoch / self.length_group_batches)
        pool_items = self.length_group_batches * self.batch_size * self.accelerator.num_processes
        self.dataset.configure(
            items_per_epoch=pools * pool_items,
            max_seq_len=self.max_seq_len,
            padded_sampling=self.padded_sampling,
            has_edit_rights=self.has_dset_edit_rights,
        )
        return self.dataset

    def _exploration_factory(self) -> Callable[..., Any] | None:
        if self.exploration_wrapper_type is None:
            return None
        resolved = resolve_component(EXPLORATIONS, self.exploration_wrapper_type)
        self._resolved_exploration = resolved
        context = {"rollout_horizon": self.train_timesteps_per_epoch}
        wanted = getattr(type(resolved.config), "inferred_context", ()) if resolved.config is not None else ()
        extra = {k: v for k, v in context.items() if k in wanted}
        return functools.partial(resolved.build, **extra)

    def _env_seed(self, role: str = "train") -> int | None:
        """The seed of a pool's first reset (row i gets ``seed + i``).

        Each data-parallel process gets its own, so processes see different tasks, and val/test pools get a
        stream apart from the train pool's: seeded alike, a val env would replay its train twin's tasks (the
        same lakes, mazes or goal sides) and evaluation would score tasks the agent trained on.
        """
        if self.seed is None:
            return None
        process = self.accelerator.process_index
        if role == "train":
            return self.seed + 7919 * process
        stream = np.random.SeedSequence([self.seed, process, _POOL_ROLES.index(role)])
        return int(stream.generate_state(1)[0] % 2**31)

    def _make_pool(self, makers: list[Callable], *, role: str, save_dir: Path | None) -> Any:
        """An env pool for ``role`` (``train``: with exploration; ``val``/``test``: without)."""
        train = role == "train"
        exploration = self._exploration_factory() if train else None
        base_seed = None if self.seed is None else self.seed * 10_000 + self.accelerator.process_index * 1_000
        creators = []
        for i, make in enumerate(makers):
            creators.append(
                EnvCreator(
                    make_env=make,
                    exploration=exploration,
                    save_dir=save_dir,
                    save_as=self.save_trajs_as,
                    traj_save_len=self.traj_save_len if self.traj_save_len < 10**9 else None,
                    # AMAGO staggers only snippets longer than a training window; whole-window files stay whole.
                    stagger=self.max_seq_len
                    if self.stagger_traj_file_lengths and self.max_seq_len < self.traj_save_len < 10**9
                    else 0,
                    seed=None if base_seed is None else base_seed + i + (0 if train else 500),
                )
            )
        pool = make_pool(
            self.env_mode,
            creators,
            start_method=self.async_env_mp_context or "forkserver",
            num_envs=self.parallel_actors,
        )
        self._pool_roles[id(pool)] = role
        return pool

    def init_envs(self) -> str:
        """Builds the train and val env pools; returns a one-line description."""
        n_makers = 1 if self.env_mode == "already_vectorized" else self.parallel_actors
        context = warnings.catch_warnings() if self.quiet_warnings else nullcontext()
        with context:
            if self.quiet_warnings:
                warnings.simplefilter("ignore")
            train_src = self.make_train_env or self.make_val_env
            sample_env = (train_src if callable(train_src) else next(iter(train_src)))()
            self.obs_space = sample_env.observation_space
            self.action_space = sample_env.action_space
            import gymnasium

            self.rl2_space = gymnasium.spaces.Box(
                -np.inf, np.inf, (1 + int(sample_env.action_dim),), np.float32
            )
            sample_env.close()
            self.train_envs = None
            if self.make_train_env is not None:
                save_dir = self.dataset.save_new_trajs_to
                self.train_envs = self._make_pool(
                    _as_list(self.make_train_env, n_makers, "make_train_env"), role="train", save_dir=save_dir
                )
                self._train_timestep = self.train_envs.reset(seed=self._env_seed("train"))
                self._seeded_pools.add(id(self.train_envs))
            self.val_envs = None
            val_src = self.make_val_env or self.make_train_env
            if val_src is not None and self.val_timesteps_per_epoch > 0 and self.val_interval:
                self.val_envs = self._make_pool(
                    _as_list(val_src, n_makers, "make_val_env"), role="val", save_dir=None
                )
        self.hidden_state = None
        return (
            f"{self.parallel_actors} {self.env_mode} actors; obs {self.obs_space}; actions {self.action_space}; "
            f"exploration {self.exploration_wrapper_type!r}"
        )

    def init_model(self) -> None:
        """Builds the agent, the optimiser and the warmup schedule, and prepares them with accelerate."""
        self._resolved_tstep = resolve_component(TSTEP_ENCODERS, self.tstep_encoder_type)
        self._resolved_traj = resolve_component(TRAJ_ENCODERS, self.traj_encoder_type)
        self._resolved_agent = resolve_component(
            AGENTS, self.agent_type, overrides={"critic_loss_weight": self.critic_loss_weight}
        )
        agent = self._resolved_agent.build(
            obs_space=self.obs_space,
            rl2_space=self.rl2_space,
            action_space=self.action_space,
            max_seq_len=self.max_seq_len,
            tstep_encoder=self._resolved_tstep.as_choice(),
            traj_encoder=self._resolved_traj.as_choice(),
        )
        optimizer = self.init_optimizer(agent)
        warmup = max(self.lr_warmup_steps, 1)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min((step + 1) / warmup, 1.0))
        self.policy_aclr, self.optimizer, self.lr_schedule = self.accelerator.prepare(
            agent, optimizer, scheduler
        )
        self.accelerator.register_for_checkpointing(self.lr_schedule)
        self.grad_update_counter = 0

    def init_optimizer(self, policy: torch.nn.Module) -> torch.optim.Optimizer:
        """The optimiser (override point): AdamW over the agent's trainable parameters."""
        params = (
            list(policy.trainable_parameters())
            if hasattr(policy, "trainable_parameters")
            else policy.parameters()
        )
        return torch.optim.AdamW(params, lr=self.learning_rate, weight_decay=self.l2_coeff)

    def init_checkpoints(self) -> None:
        """Creates the checkpoint folders."""
        if self.accelerator.is_main_process:
            self.paths.make_dirs()
        self.accelerator.wait_for_everyone()
        self.epoch = 0

    def component_versions(self) -> dict[str, str]:
        """distribution==version of each component used (for config.resolved.json)."""
        from amago_core.plugins.registry import registries

        versions = {}
        for slot, resolved in (
            ("tstep_encoder", self._resolved_tstep),
            ("traj_encoder", self._resolved_traj),
            ("agent", self._resolved_agent),
            ("exploration", getattr(self, "_resolved_exploration", None)),
        ):
            if resolved is None or resolved.spec is None:
                continue
            group = {"tstep_encoder": TSTEP_ENCODERS, "traj_encoder": TRAJ_ENCODERS, "agent": AGENTS}.get(
                slot, EXPLORATIONS
            )
            records = registries()[group].records(resolved.spec.name)
            if records:
                versions[slot] = f"{records[0].distribution}=={records[0].version}"
        return versions

    def init_logger(self) -> None:
        """Writes config.resolved.json and opens the log backends (main process only)."""
        config = dict(self.resolved_config or {})
        components = {
            "tstep_encoder": self._resolved_tstep.describe(),
            "traj_encoder": self._resolved_traj.describe(),
            "agent": self._resolved_agent.describe(),
        }
        for key, value in components.items():
            config.setdefault(key, value)
        config.setdefault("run", {}).setdefault("name", self.run_name)
        config.setdefault("logging", {}).update(
            log_to_wandb=self.log_to_wandb,
            wandb_project=self.wandb_project,
            wandb_entity=self.wandb_entity,
            wandb_group_name=self.wandb_group_name,
        )
        self.run_record = {
            **config,
            "_provenance": {
                "command": shlex.join(sys.argv),
                "components": self.component_versions(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            },
        }
        main = self.accelerator.is_main_process
        if main and self.record_config:
            atomic_write_json(self.paths.config, self.run_record)
        self.logger = RunLogger(self.paths.root, self.run_record, enabled=main)

    def summary(self, env_summary: str) -> None:
        """Prints the run's key settings."""
        n_params = sum(p.numel() for p in self.policy.parameters() if p.requires_grad)
        lines = [
            f"amago run {self.run_name!r} -> {self.paths.root}",
            f"  agent {self._resolved_agent.name} | tstep {self._resolved_tstep.name} | traj {self._resolved_traj.name}"
            f" | {n_params:,} trainable parameters | device {self.DEVICE} x{self.accelerator.num_processes}",
            f"  envs: {env_summary}",
            f"  data: {self.dataset.get_description()}",
            f"  schedule: {self.epochs} epochs x ({self.train_timesteps_per_epoch} steps/actor, "
            f"{self.train_batches_per_epoch} batches of {self.batch_size}"
            + (
                f", length-grouped in pools of {self.length_group_batches}"
                if self.length_group_batches > 1
                else ""
            )
            + f"); precision {self.mixed_precision}",
        ]
        tqdm.write("\n".join(lines))

    # =========================================================================================================
    # properties
    # =========================================================================================================
    @property
    def policy(self) -> torch.nn.Module:
        """The agent, unwrapped from accelerate/DDP."""
        return self.accelerator.unwrap_model(self.policy_aclr)

    @property
    def DEVICE(self) -> torch.device:
        """The device this process runs on."""
        return self.accelerator.device

    def caster(self):
        """Autocast context for rollouts under mixed precision (no-op otherwise)."""
        if self.mixed_precision == "no":
            return nullcontext()
        dtype = torch.bfloat16 if self.mixed_precision == "bf16" else torch.float16
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
        return self.logger.log(metrics, key, self.x_axis_metrics())

    # =========================================================================================================
    # acting
    # =========================================================================================================
    def _policy_input(self, timestep: Any) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
        inp = timestep.as_input()
        device = self.DEVICE
        obs = {
            k: torch.from_numpy(np.ascontiguousarray(v)).to(device).unsqueeze(1) for k, v in inp.obs.items()
        }
        rl2 = torch.from_numpy(np.ascontiguousarray(inp.rl2, dtype=np.float32)).to(device).unsqueeze(1)
        time_idx = (
            torch.from_numpy(np.ascontiguousarray(inp.time_idx, dtype=np.int64)).to(device).unsqueeze(1)
        )
        return obs, rl2, time_idx

    @staticmethod
    def _env_actions(actions: torch.Tensor) -> np.ndarray:
        return actions[:, 0].cpu().numpy()

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
        policy = self.policy
        policy.eval()
        envs.reset_stats()
        if timestep is None:
            # Seed a pool's first reset only: later evaluations continue its random stream, so they see new
            # tasks (lakes, mazes, goal sides) instead of replaying the first evaluation's.
            first_reset = id(envs) not in self._seeded_pools
            self._seeded_pools.add(id(envs))
            role = self._pool_roles.get(id(envs), "test")
            timestep = envs.reset(seed=self._env_seed(role) if first_reset else None)
            hidden_state = None
        if hidden_state is None:
            hidden_state = policy.init_hidden_state(envs.num_envs, self.DEVICE)
        frames_before = envs.stats().get("frames_by_env_name", {})
        done_episodes = 0
        bar = tqdm(
            total=timesteps,
            desc=desc,
            leave=False,
            disable=not self.verbose or not self.accelerator.is_main_process,
        )
        with torch.no_grad():
            for _ in range(timesteps):
                obs, rl2, time_idx = self._policy_input(timestep)
                with self.caster():
                    actions, hidden_state = policy.get_actions(
                        obs, rl2, time_idx, hidden_state, sample=sample
                    )
                result = envs.step(self._env_actions(actions))
                timestep = result.timestep
                done = np.asarray(result.done).reshape(-1)
                if done.any():
                    hidden_state = policy.reset_hidden_state(hidden_state, done)
                    done_episodes += int(done.sum())
                    if save_on_done:
                        envs.save_finished_trajs()
                if render and hasattr(envs, "render"):
                    envs.render()
                bar.update(1)
                if episodes is not None and done_episodes >= episodes:
                    break
        bar.close()
        stats = envs.stats()
        stats["new_frames_by_env_name"] = {
            name: count - frames_before.get(name, 0)
            for name, count in stats.get("frames_by_env_name", {}).items()
        }
        return hidden_state, timestep, stats

    def collect_new_training_data(self) -> None:
        """Steps the train envs ``train_timesteps_per_epoch`` times; finished trajectories go to the buffer.

        The train envs and the policy's memory persist across epochs (rollouts continue mid-episode).
        """
        if self.train_envs is None:
            return
        every = self.force_reset_train_envs_every
        if every and self.epoch > 0 and self.epoch % every == 0:
            self._train_timestep = self.train_envs.reset()
            self.hidden_state = None
        self.hidden_state, self._train_timestep, stats = self.interact(
            self.train_envs,
            self.train_timesteps_per_epoch,
            hidden_state=self.hidden_state,
            sample=self.sample_actions_train,
            timestep=self._train_timestep,
            desc=f"collect (epoch {self.epoch})",
        )
        self.train_envs.save_finished_trajs()
        local = {
            "frames": sum(stats["new_frames_by_env_name"].values()),
            "by_name": stats["new_frames_by_env_name"],
        }
        for part in self._gather(local):
            self.total_frames += part["frames"]
            for name, count in part["by_name"].items():
                self.frames_by_env_name[name] = self.frames_by_env_name.get(name, 0) + count

    def _gather(self, obj: Any) -> list[Any]:
        if self.accelerator.num_processes == 1:
            return [obj]
        return gather_object([obj])

    def _evaluate(self, envs: Any, timesteps: int, episodes: int | None = None) -> dict[str, float]:
        start = time.perf_counter()
        _, _, stats = self.interact(
            envs, timesteps, sample=self.sample_actions, episodes=episodes, desc="evaluate"
        )
        elapsed = max(time.perf_counter() - start, 1e-9)
        metrics = policy_metrics(stats)
        steps = sum(stats["new_frames_by_env_name"].values())
        metrics["Env FPS (per_process)"] = steps / elapsed
        metrics["Episodes"] = float(finished_episodes(stats))
        return self._average_over_processes(metrics)

    def _average_over_processes(self, metrics: dict[str, float]) -> dict[str, float]:
        parts = self._gather(metrics)
        if len(parts) == 1:
            return metrics
        merged: dict[str, list[float]] = {}
        for part in parts:
            for key, value in part.items():
                merged.setdefault(key, []).append(value)
        return {key: float(np.mean(values)) for key, values in merged.items()}

    def _on_evaluation(self, split: str, metrics: dict[str, float]) -> None:
        from amago_core.hooks.manager import hook_manager

        self._epoch_metrics.update({f"{split}/{k}": v for k, v in metrics.items()})
        hook_manager().hook.amago_on_evaluation(experiment=self, split=split, metrics=metrics)

    def evaluate_val(self) -> dict[str, float] | None:
        """Evaluates the policy on the val envs (fresh episodes and memory); logs under ``val/``."""
        if self.val_envs is None:
            return None
        metrics = self._evaluate(self.val_envs, self.val_timesteps_per_epoch)
        self.log(metrics, "val")
        self._on_evaluation("val", metrics)
        if self.verbose and self.accelerator.is_main_process and AVERAGE_RETURN_KEY in metrics:
            tqdm.write(f"epoch {self.epoch}: val {AVERAGE_RETURN_KEY} = {metrics[AVERAGE_RETURN_KEY]:.3f}")
        return metrics

    def evaluate_test(
        self,
        make_test_env: Callable[[], Any] | Iterable[Callable[[], Any]],
        timesteps: int,
        render: bool = False,
        save_trajs_to: str | Path | None = None,
        episodes: int | None = None,
    ) -> dict[str, float]:
        """One-off evaluation on new envs; logs under ``test/`` and returns this process's metrics."""
        n_makers = 1 if self.env_mode == "already_vectorized" else self.parallel_actors
        makers = _as_list(make_test_env, n_makers, "make_test_env")
        envs = self._make_pool(makers, role="test", save_dir=Path(save_trajs_to) if save_trajs_to else None)
        try:
            start = time.perf_counter()
            _, _, stats = self.interact(
                envs,
                timesteps,
                render=render,
                save_on_done=save_trajs_to is not None,
                episodes=episodes,
                sample=self.sample_actions,
                desc="test",
            )
            if save_trajs_to is not None:
                envs.save_finished_trajs()
            metrics = policy_metrics(stats)
            metrics["Env FPS (per_process)"] = sum(stats["new_frames_by_env_name"].values()) / max(
                time.perf_counter() - start, 1e-9
            )
        finally:
            envs.close()
            # The pool's id may be reused by the next one: a stale entry would skip that pool's seeded reset.
            self._seeded_pools.discard(id(envs))
            self._pool_roles.pop(id(envs), None)
        averaged = self._average_over_processes(metrics)
        self.log(averaged, "test")
        self._on_evaluation("test", averaged)
        return metrics

    # =========================================================================================================
    # learning
    # =========================================================================================================
    def init_dloaders(self) -> DataLoader:
        """A DataLoader over the dataset for one epoch (rebuilt each epoch so workers see new files).

        Each item it yields is a list of ``(Batch, loss_weight)`` pairs: ``length_group_batches`` batches of
        similar lengths (see :class:`~amago_core.data.batch.LengthGroupedCollate`). An override may instead
        yield plain ``Batch`` objects, trained on with weight 1.
        """
        loader = DataLoader(
            self.dataset,
            batch_size=self.batch_size * self.length_group_batches,
            num_workers=self.dloader_workers,
            collate_fn=LengthGroupedCollate(self.length_group_batches),
            pin_memory=self.DEVICE.type == "cuda",
        )
        self.train_dloader = loader
        return loader

    def compute_loss(self, batch: Batch, log_step: bool) -> tuple[torch.Tensor, dict[str, Any]]:
        """The agent's loss and metrics for one batch (through the accelerate/DDP wrapper)."""
        return self.policy_aclr(batch, log_step=log_step)

    def train_step(self, batch: Batch, log_step: bool, loss_weight: float = 1.0) -> dict[str, Any]:
        """One gradient step (or one accumulation micro-step), the loss scaled by ``loss_weight``."""
        batch = batch.to_torch(self.DEVICE)
        with self.accelerator.accumulate(self.policy_aclr):
            self.optimizer.zero_grad()
            loss, metrics = self.compute_loss(batch, log_step)
            self.accelerator.backward(loss * loss_weight if loss_weight != 1.0 else loss)
            stepped = self.accelerator.sync_gradients
            if stepped:
                self.accelerator.clip_grad_norm_(self.policy_aclr.parameters(), self.grad_clip)
                if log_step:
                    metrics["Learning Rate"] = self.lr_schedule.get_last_lr()[0]
                    if hasattr(self.policy, "grad_norms"):
                        metrics.update(self.policy.grad_norms())
            self.optimizer.step()
            self.lr_schedule.step()
            if stepped:
                # The agent keeps a copy of its critics exactly one update old for the policy gradient; it
                # moves its targets after each real optimiser step (not after accumulation micro-steps).
                self.policy.soft_sync_targets()
                self.grad_update_counter += 1
        metrics["Loss"] = float(loss.detach())
        return metrics

    def _train_epoch(self) -> None:
        loader = self.accelerator.prepare(self.init_dloaders())
        self.policy_aclr.train()
        bar = tqdm(
            total=self.train_batches_per_epoch,
            desc=f"learn (epoch {self.epoch})",
            leave=False,
            disable=not self.verbose or not self.accelerator.is_main_process,
        )
        for i, (batch, weight) in enumerate(_weighted_batches(loader)):
            if i >= self.train_batches_per_epoch:
                break
            step = self.epoch * self.train_batches_per_epoch + i
            log_step = step % self.log_interval == 0
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
        """The main loop: per epoch, evaluate -> collect -> learn -> checkpoint (see the seeds' docs)."""
        if not self._started:
            msg = "call Experiment.start() before learn()"
            raise RuntimeError(msg)
        epoch = self.epoch
        while epoch < self.epochs and not self._stop_requested:
            self.epoch = epoch
            self._epoch_metrics = {}
            self._run_epoch(epoch)
            self.hooks_epoch_end(epoch)
            epoch += 1
        self.epoch = epoch  # the next epoch to run: `epochs` when finished, earlier after request_stop()

    def _wait_until_ready(self) -> bool:
        """Polls a dataset that another process fills; True once it is ready (or False if stopped)."""
        announced = False
        while not self.dataset.ready_for_training and not self._stop_requested:
            if self.verbose and self.accelerator.is_main_process and not announced:
                tqdm.write(f"waiting for training data: {self.dataset.not_ready_reason()}")
                announced = True
            time.sleep(2.0)
            rescan = getattr(self.dataset, "refresh", None) or self.dataset.on_end_of_collection
            rescan()  # pick up the files other processes wrote meanwhile
        return self.dataset.ready_for_training

    def _run_epoch(self, epoch: int) -> None:
        if self.always_load_latest:
            self.read_latest_policy()
        if self.val_interval and epoch % self.val_interval == 0 and self.val_timesteps_per_epoch > 0:
            self.evaluate_val()
        if epoch >= self.start_collecting_at_epoch and self.train_timesteps_per_epoch > 0:
            self.collect_new_training_data()
        self.accelerator.wait_for_everyone()
        dataset_metrics = self.dataset.on_end_of_collection() if self.accelerator.is_main_process else {}
        self.accelerator.wait_for_everyone()
        if self.accelerator.num_processes > 1 and hasattr(self.dataset, "refresh"):
            self.dataset.refresh()  # see the main process's deletions and everyone's new files
        if dataset_metrics:
            self.log(dataset_metrics, "dataset")
            self._epoch_metrics.update({f"dataset/{k}": v for k, v in dataset_metrics.items()})
        if not self.dataset.ready_for_training and not (self.wait_for_data and self._wait_until_ready()):
            if self.verbose and self.accelerator.is_main_process:
                tqdm.write(f"epoch {epoch}: not training yet ({self.dataset.not_ready_reason()})")
            return
        if epoch < self.start_learning_at_epoch:
            return
        if self.train_batches_per_epoch > 0:
            self._train_epoch()
        self.accelerator.wait_for_everyone()
        if self.ckpt_interval and epoch % self.ckpt_interval == 0:
            self.save_checkpoint()
        if self.always_save_latest:
            self.write_latest_policy()

    def request_stop(self) -> None:
        """Ends :meth:`learn` after the current epoch (early stopping from a callback or a subclass)."""
        self._stop_requested = True

    def hooks_epoch_end(self, epoch: int) -> None:
        from amago_core.hooks.manager import hook_manager

        metrics = {**self._epoch_metrics, **self.x_axis_metrics()}
        hook_manager().hook.amago_on_epoch_end(experiment=self, epoch=epoch, metrics=metrics)

    # =========================================================================================================
    # checkpoints
    # =========================================================================================================
    def _progress(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "grad_update_counter": self.grad_update_counter,
            "total_frames": self.total_frames,
            "frames_by_env_name": self.frames_by_env_name,
        }

    def save_checkpoint(self) -> None:
        """Saves the full training state (model, optimiser, schedule, RNG) and the policy weights."""
        target = self.paths.training_state(self.epoch)
        main = self.accelerator.is_main_process
        if main:
            # accelerate writes every process's RNG state from the main process's call in single-node runs;
            # the folder is filled under a temp name, then swapped in, so a crash never leaves half of one.
            def fill(tmp: Path) -> None:
                self.accelerator.save_state(str(tmp), safe_serialization=True)
                write_progress(tmp, self._progress())

            replace_dir(target, fill)
            save_policy_weights(self.policy, self.paths.policy_at(self.epoch))
        self.accelerator.wait_for_everyone()
        from amago_core.hooks.manager import hook_manager

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
        if not path.exists():
            msg = f"no checkpoint at {path}; `amago run --resume` picks the newest complete one"
            raise FileNotFoundError(msg)
        if is_accelerate_state:
            self.accelerator.load_state(str(path))
            progress = read_progress(path)
            self.epoch = int(progress["epoch"])
            self.grad_update_counter = int(progress["grad_update_counter"])
            self.total_frames = int(progress["total_frames"])
            self.frames_by_env_name = dict(progress["frames_by_env_name"])
        else:
            load_policy_weights(self.policy, path)
        if hasattr(self.policy, "on_checkpoint_loaded"):
            self.policy.on_checkpoint_loaded(is_accelerate_state)

    def resume_latest(self) -> int | None:
        """Loads the newest complete checkpoint and continues after its epoch; returns that epoch (or None)."""
        epochs = self.paths.saved_epochs()
        if not epochs:
            return None
        self.load_checkpoint(epochs[-1], resume_training_state=True)
        self.epoch = epochs[-1] + 1
        return epochs[-1]

    def write_latest_policy(self) -> None:
        """Writes the current weights to ``ckpts/latest`` (what collect-only processes read)."""
        if self.accelerator.is_main_process:
            save_policy_weights(self.policy, self.paths.latest_policy)

    def read_latest_policy(self) -> None:
        """Loads ``ckpts/latest`` if it exists (warns once if not yet written)."""
        if self.paths.latest_policy.is_file():
            load_policy_weights(self.policy, self.paths.latest_policy, retries=10)
        elif self.verbose and self.accelerator.is_main_process:
            tqdm.write(f"no latest policy at {self.paths.latest_policy} yet; acting with the current weights")

    def delete_buffer_from_disk(self) -> None:
        """Deletes the replay buffer's FIFO files (main process)."""
        if self.accelerator.is_main_process:
            self.dataset.delete()

    def close(self) -> None:
        """Closes envs and log backends."""
        for envs in (getattr(self, "train_envs", None), getattr(self, "val_envs", None)):
            if envs is not None:
                envs.close()
        logger = getattr(self, "logger", None)
        if logger is not None:
            logger.close()


EXPERIMENT_FIELDS = tuple(f.name for f in fields(Experiment))
"""Every constructor parameter, in order (used by the config builder)."""

__all__ = ["EXPERIMENT_FIELDS", "Experiment", "ResolvedComponent"]
