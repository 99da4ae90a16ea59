"""Setting an experiment up: accelerator and seed, dataset, envs, model and optimiser, run folder, logging."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs, broadcast_object_list, set_seed
from tqdm.auto import tqdm

from amago_core.data.dataset import RLDataset
from amago_core.data.disk_buffer import DiskTrajDataset
from amago_core.experiment.checkpoints import CheckpointStore
from amago_core.experiment.collectors import build_collector
from amago_core.experiment.env_runner import EnvRunner
from amago_core.experiment.fast_torch import skip_dynamo_import, tune_allocator, untraced_adamw
from amago_core.experiment.interaction import InteractionMixin
from amago_core.experiment.learner import Learner
from amago_core.experiment.logger import RunLogger
from amago_core.experiment.processes import default_torch_threads
from amago_core.experiment.provenance import run_record, summary_lines
from amago_core.experiment.resume import finish_resume, load_resumed_state
from amago_core.experiment.run_dir import RunPaths, atomic_write_json
from amago_core.experiment.run_lock import hold_run
from amago_core.experiment.shared_run import agree_on_config, check_shared_folders
from amago_core.experiment.training import items_per_epoch
from amago_core.rollout.spaces import PolicySpaces


class SetupMixin(InteractionMixin):
    """``start`` and the ``init_*`` override points of ``Experiment`` (AMAGO's start order)."""

    # ---- setup ---------------------------------------------------------------------------------------------
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
        existed = {path for path in self._folders_start_may_create() if path.exists()}
        try:
            self._start(resume)
        except BaseException:
            self.close()
            # Leave no empty run folder behind (files, if any were written, are kept).
            for folder in self._folders_start_may_create():
                if folder not in existed:
                    _remove_empty_dirs(folder)
            raise

    def _folders_start_may_create(self) -> list[Path]:
        replay, run = self.config.replay, self.config.run
        buffer_root = Path(replay.dset_root if replay.dset_root is not None else run.ckpt_base_dir)
        return [self.paths.root, buffer_root / (replay.dset_name or str(run.name))]

    def _start(self, resume: bool) -> None:
        optim = self.config.optim
        self.accelerator = Accelerator(
            # Without CUDA, `cpu=True` is what lets accelerate see a multi-process launch as MULTI_CPU (gloo)
            # instead of silently running each process alone.
            cpu=not torch.cuda.is_available(),
            gradient_accumulation_steps=optim.batches_per_update,
            mixed_precision=optim.mixed_precision,
            kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)],
        )
        seed = self._agree_on_seed()
        if self.accelerator.num_processes > 1:
            self._agree_on_run()
        set_seed(seed + self.accelerator.process_index)
        if self.config.run.deterministic:
            # cuBLAS needs a fixed workspace to be deterministic; it must be set before its first use.
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True)
            torch.backends.cudnn.benchmark = False
        threads = self.config.run.torch_threads
        if self.DEVICE.type == "cpu":
            tune_allocator()  # big activation tensors reuse heap memory instead of page-faulting each step
        if self.DEVICE.type == "cpu" or threads:
            torch.set_num_threads(threads or default_torch_threads(self.accelerator.num_processes))
        # One process writes a run at a time, and a fresh run never mixes into an old one: checked before any
        # file of the run is written (the lock is released in close()).
        self._run_lock = hold_run(
            self.paths, self.accelerator, self.role, resume=resume, evaluation_only=self.evaluation_only
        )
        self.checkpoints = CheckpointStore(self.accelerator, self.paths)
        # The rollout loop it runs is this experiment's interact, looked up on every call: a subclass's override
        # and one assigned to the instance later (a test's recorder) both run.
        self.env_runner = EnvRunner(
            self.config, self.components, self.accelerator, lambda *args, **kw: self.interact(*args, **kw)
        )
        # Read before the envs are built: the exploration schedule continues from the saved frame count.
        resumed = self._newest_usable_state() if resume else None
        if resumed is not None:
            self.total_frames = resumed.progress.total_frames
        if not self.evaluation_only:
            self.init_dsets()
        env_summary = self.init_envs()
        self.init_model()
        if resumed is not None:
            # Before the run folder is written (config.resolved.json, metrics): a state that does not fit this
            # model fails here and leaves the run as it was.
            load_resumed_state(self, resumed)
        self.init_checkpoints()
        self.init_logger()
        if resumed is not None:
            finish_resume(self, resumed)
        self._started = True
        if self.config.logging.verbose and self.accelerator.is_main_process:
            self.summary(env_summary)

    def _agree_on_seed(self) -> int:
        """The run's seed; an unseeded run draws a fresh one (the same in every process) and records it."""
        seed = self.config.run.seed
        if seed is None:
            drawn = [int(np.random.SeedSequence().generate_state(1)[0] % 2**31)]
            if self.accelerator is not None and self.accelerator.num_processes > 1:
                broadcast_object_list(drawn)
            seed = drawn[0]
            self.config = self.config.model_copy(
                update={"run": self.config.run.model_copy(update={"seed": seed})}
            )
        return seed

    def _agree_on_run(self) -> None:
        """Several processes: one config (the main process's run name) and run folders they all share."""
        self.config = agree_on_config(self._accelerator, self.config)
        self.paths = RunPaths(Path(self.config.run.ckpt_base_dir), str(self.config.run.name))
        folders = self._folders_start_may_create()
        if self.dataset is not None or self.evaluation_only:
            folders = folders[:1]  # no default buffer is built: only the run folder is written
        check_shared_folders(self._accelerator, list(dict.fromkeys(folders)))

    def init_dsets(self) -> RLDataset:
        """Configures the dataset (creating the default disk buffer, with the config's relabeler, if none was
        given)."""
        replay, run = self.config.replay, self.config.run
        if self.dataset is None:
            self.dataset = DiskTrajDataset(
                dset_root=replay.dset_root if replay.dset_root is not None else run.ckpt_base_dir,
                dset_name=replay.dset_name or str(run.name),
                dset_max_size=replay.dset_max_size,
                dset_min_size=replay.dset_min_size,
                relabeler=self.components.build_relabeler(
                    seed=relabel_seed(run.seed, self._accelerator.process_index), env=self.config.env
                ),
                seed=run.seed,
                # .traj files are pickles: read only when this invocation allows it (never a run folder's
                # config), and then through a restricted unpickler (numpy arrays and builtins only).
                allow_pickle_files=self.allow_traj_pickles,
            )
        elif self.components.relabeler is not None:
            msg = (
                f"replay.relabeler is {self.components.relabeler.name!r}, but this run was given its own dataset, "
                "which the relabeler cannot reach; pass the relabeler to that dataset "
                "(DiskTrajDataset(..., relabeler=...)) or unset replay.relabeler."
            )
            raise ValueError(msg)
        self.dataset.seed_for_process(self._accelerator.process_index)
        self.dataset.configure(
            items_per_epoch=items_per_epoch(self.config, self._accelerator.num_processes),
            max_seq_len=run.max_seq_len,
            padded_sampling=replay.padded_sampling,
            # One process edits a buffer (FIFO deletions, quarantine); every other one only re-lists it.
            has_edit_rights=(
                replay.has_dset_edit_rights
                and not self.role.only_collects
                and self._accelerator.is_main_process
            ),
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
        sched, role, runner = self.config.schedule, self.role, self._runner()
        if self._collects_this_run and self.make_train_env is not None:
            # Remote actors (config `ray`) collect instead of a pool here; None in the default run.
            runner.collector = build_collector(self)
        if runner.collector is None and self._collects_this_run and self.make_train_env is not None:
            save_dir = self.dataset.save_new_trajs_to if self.dataset is not None else None
            runner.open_train_pool(self.make_train_env, save_dir, start_frames=self.total_frames)
        evaluates = role.evaluates and sched.val_timesteps_per_epoch > 0 and sched.val_interval is not None
        evaluates = evaluates and not (runner.collector is not None and runner.collector.evaluates)
        if evaluates and self.make_val_env is not None and not self.evaluation_only:
            runner.open_val_pool(self.make_val_env)
        rollout, remote = self.config.rollout, self.config.ray
        exploration = self.components.exploration.name if self.components.exploration is not None else None
        actors = f"{rollout.parallel_actors} {rollout.env_mode} actors"
        if runner.collector is not None:
            envs = self.config.envs_per_ray_actor
            actors = f"{remote.actors} Ray actors x {envs} {rollout.env_mode} envs"
        return f"{actors}; obs {self.obs_space}; actions {self.action_space}; exploration {exploration}"

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
        skip_dynamo_import()  # nothing here compiles: the optimiser need not import torch's compiler (~1.5 s)
        optimizer = self.init_optimizer(agent)
        self.learner = Learner(
            self._accelerator, agent, optimizer, warmup_steps=self.config.optim.lr_warmup_steps
        )
        self.grad_update_counter = 0

    def init_optimizer(self, policy: torch.nn.Module) -> torch.optim.Optimizer:
        """The optimiser (override point): AdamW over the agent's trainable parameters."""
        trainable = getattr(policy, "trainable_parameters", None)
        params = list(trainable()) if callable(trainable) else list(policy.parameters())
        optim = self.config.optim
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
        record = run_record(self.config, self.components)
        main = self._accelerator.is_main_process
        if main and not self.evaluation_only and not self.role.only_collects:
            atomic_write_json(self.paths.config, record, root=self.paths.root)
            spaces = getattr(self, "policy_spaces", None)  # None: an init_envs override set the spaces itself
            if spaces is not None:
                atomic_write_json(self.paths.spaces, spaces.to_json(), root=self.paths.root)
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
        )
        tqdm.write("\n".join(lines), file=sys.stderr)


RELABEL_STREAM = 0x7E1A
"""Entropy word that sets the relabelers' seeds apart from other streams drawn from the run's seed."""


def relabel_seed(seed: int | None, process: int) -> int | None:
    """The seed of process ``process``'s relabeler: its own stream of the run's seed, apart from the sampler's
    and every other process's (None: unseeded)."""
    if seed is None:
        return None
    return int(np.random.SeedSequence([seed, process, RELABEL_STREAM]).generate_state(1)[0])


def _remove_empty_dirs(root: Path) -> None:
    """Removes ``root`` and the folders under it that hold no file (deepest first); anything with a file stays."""
    if not root.is_dir():
        return
    for folder in sorted(
        (p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
    ):
        with contextlib.suppress(OSError):
            folder.rmdir()  # fails (and is left) when not empty
    with contextlib.suppress(OSError):
        root.rmdir()
