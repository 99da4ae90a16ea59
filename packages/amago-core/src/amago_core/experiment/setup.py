"""Building an experiment's process-wide pieces: the precision, the accelerator, the seed, torch's settings, the
default buffer (``Experiment.start()`` calls these in AMAGO's order; each returns what it built)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs, broadcast_object_list

from amago_core.config.components import RunComponents
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.sources import PROVENANCE_KEY
from amago_core.data.dataset import RLDataset
from amago_core.data.disk_buffer import DiskTrajDataset
from amago_core.experiment import precision_probe
from amago_core.experiment.fast_torch import tune_allocator
from amago_core.experiment.hardware import PRECISIONS, Precision, PrecisionChoice, choose_precision
from amago_core.experiment.processes import ProcessRole, default_torch_threads
from amago_core.experiment.run_dir import RunPaths
from amago_core.experiment.training import items_per_epoch

RELABEL_STREAM = 0x7E1A
"""Entropy word that sets the relabelers' seeds apart from other streams drawn from the run's seed."""


def training_device_type() -> str:
    """The device type this process trains on: ``cuda`` where torch sees a GPU, else ``cpu`` (as
    :func:`open_accelerator` chooses)."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def choose_run_precision(config: ExperimentConfig, paths: RunPaths, *, resume: bool) -> PrecisionChoice:
    """Resolves ``optim.mixed_precision`` (``auto`` included) for this process's training device.

    The record keeps what was asked for: a resumed ``auto`` run resolves again on this machine (the start says so
    when the answer differs from the run's last start). A record from before records kept ``auto`` holds the
    precision its run resolved to, which ``auto`` keeps: a state trained in bf16 then continues in bf16, with the
    warning line where this machine emulates bf16.
    """
    return choose_precision(
        config.optim.mixed_precision,
        training_device_type(),
        saved=recorded_precision(paths) if resume else None,
    )


def _record(paths: RunPaths) -> dict[str, Any]:
    """A run folder's ``config.resolved.json`` (empty: none, or none readable)."""
    try:
        record = json.loads(paths.config.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return record if isinstance(record, dict) else {}


def recorded_precision(paths: RunPaths) -> Precision | None:
    """The precision a run folder's record holds when it holds one (None: ``auto``, no record, none readable)."""
    optim = _record(paths).get("optim")
    value = optim.get("mixed_precision") if isinstance(optim, dict) else None
    return cast(Precision, value) if value in PRECISIONS else None


def recorded_precision_choice(paths: RunPaths) -> dict[str, Any] | None:
    """What the run's last start resolved its precision to (the record's ``_provenance.precision``), or None."""
    provenance = _record(paths).get(PROVENANCE_KEY)
    entry = provenance.get("precision") if isinstance(provenance, dict) else None
    return entry if isinstance(entry, dict) else None


def accelerate_precision(precision: Precision) -> Precision:
    """What accelerate is given: ``fp16`` (its gradient scaler needs to know); bf16 and fp32 are ``no``, because
    the experiment's own autocasts decide per phase what runs in bf16 (``Experiment.training_caster``/``caster``)
    and an accelerate-wrapped forward would autocast the update whatever the start measured."""
    return "fp16" if precision == "fp16" else "no"


def timed_precision(
    choice: PrecisionChoice,
    agent: torch.nn.Module,
    spaces: tuple[Any, Any, Any],
    config: ExperimentConfig,
    accelerator: Accelerator,
    *,
    time_update: bool,
) -> PrecisionChoice:
    """``auto`` on native bf16: each phase in the precision an update and a policy step of this model measured
    faster in (the main process measures; every process takes its decision).

    Args:
        choice: the pending choice.
        spaces: the agent's observation, previous-reward-and-action and action spaces.
        time_update: whether this process trains (else only the policy step is timed).
    """
    decided: list[PrecisionChoice | None] = [None]
    if accelerator.is_main_process:
        obs_space, rl2_space, action_space = spaces
        times = precision_probe.measure_phases(
            agent,
            obs_space=obs_space,
            rl2_space=rl2_space,
            action_space=action_space,
            batch_size=config.optim.batch_size,
            seq_len=config.run.max_seq_len,
            acting_rows=config.rollout.parallel_actors,
            device=accelerator.device,
            policy_threads=config.rollout.policy_threads,
            time_update=time_update,
        )
        decided = [choice.decided(times)]
    if accelerator.num_processes > 1:
        broadcast_object_list(decided)
    return cast(PrecisionChoice, decided[0])


def open_accelerator(config: ExperimentConfig, precision: Precision | None = None) -> Accelerator:
    """This process's accelerator: gradient accumulation, the fp16 gradient scaler, DDP over CUDA or gloo.

    ``precision``: what the update computes in (``PrecisionChoice.used``); None resolves ``optim.mixed_precision``
    here (``Experiment`` resolves it first).
    """
    optim = config.optim
    if precision is None:
        precision = choose_precision(optim.mixed_precision, training_device_type()).used
    return Accelerator(
        # Without CUDA, `cpu=True` is what lets accelerate see a multi-process launch as MULTI_CPU (gloo)
        # instead of silently running each process alone.
        cpu=not torch.cuda.is_available(),
        gradient_accumulation_steps=optim.batches_per_update,
        mixed_precision=accelerate_precision(precision),
        kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)],
    )


def with_agreed_seed(config: ExperimentConfig, accelerator: Accelerator) -> ExperimentConfig:
    """``config`` with its seed set: an unseeded run draws a fresh one (the same in every process), which the
    run records."""
    if config.run.seed is not None:
        return config
    drawn = [int(np.random.SeedSequence().generate_state(1)[0] % 2**31)]
    if accelerator.num_processes > 1:
        broadcast_object_list(drawn)
    return config.model_copy(update={"run": config.run.model_copy(update={"seed": drawn[0]})})


def configure_torch(config: ExperimentConfig, accelerator: Accelerator) -> None:
    """Determinism, the CPU allocator and the number of torch threads of this process."""
    if config.run.deterministic:
        # cuBLAS needs a fixed workspace to be deterministic; it must be set before its first use.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    threads, on_cpu = config.run.torch_threads, accelerator.device.type == "cpu"
    if on_cpu:
        tune_allocator()  # big activation tensors reuse heap memory instead of page-faulting each step
    if on_cpu or threads:
        torch.set_num_threads(threads or default_torch_threads(accelerator.num_processes))


def folders_start_may_create(config: ExperimentConfig, paths: RunPaths) -> list[Path]:
    """The run folder and the default buffer's folder: what a failed start removes again when empty."""
    replay, run = config.replay, config.run
    buffer_root = Path(replay.dset_root if replay.dset_root is not None else run.ckpt_base_dir)
    return [paths.root, buffer_root / (replay.dset_name or str(run.name))]


def default_dataset(
    config: ExperimentConfig, components: RunComponents, process: int, *, allow_traj_pickles: bool
) -> DiskTrajDataset:
    """The disk buffer at ``{dset_root}/{dset_name}``, with the config's relabeler."""
    replay, run = config.replay, config.run
    return DiskTrajDataset(
        dset_root=replay.dset_root if replay.dset_root is not None else run.ckpt_base_dir,
        dset_name=replay.dset_name or str(run.name),
        dset_max_size=replay.dset_max_size,
        dset_min_size=replay.dset_min_size,
        relabeler=components.build_relabeler(seed=relabel_seed(run.seed, process), env=config.env),
        seed=run.seed,
        # .traj files are pickles: read only when this invocation allows it (never a run folder's config),
        # and then through a restricted unpickler (numpy arrays and builtins only).
        allow_pickle_files=allow_traj_pickles,
    )


def prepare_dataset(
    dataset: RLDataset | None,
    config: ExperimentConfig,
    components: RunComponents,
    role: ProcessRole,
    accelerator: Accelerator,
    allow_traj_pickles: bool,
) -> RLDataset:
    """``Experiment.init_dsets``: the given dataset, or the default disk buffer with the config's relabeler,
    configured for this process.

    Raises:
        ValueError: a relabeler is configured but the run was given its own dataset, which it cannot reach.
    """
    if dataset is None:
        dataset = default_dataset(
            config, components, accelerator.process_index, allow_traj_pickles=allow_traj_pickles
        )
    elif components.relabeler is not None:
        msg = (
            f"replay.relabeler is {components.relabeler.name!r}, but this run was given its own dataset, "
            "which the relabeler cannot reach; pass the relabeler to that dataset "
            "(DiskTrajDataset(..., relabeler=...)) or unset replay.relabeler."
        )
        raise ValueError(msg)
    configure_dataset(dataset, config, role, accelerator)
    return dataset


def configure_dataset(
    dataset: RLDataset, config: ExperimentConfig, role: ProcessRole, accelerator: Accelerator
) -> None:
    """Seeds ``dataset`` for this process and tells it the epoch's size, the sequence length and whether this
    process edits the buffer."""
    replay = config.replay
    dataset.seed_for_process(accelerator.process_index)
    dataset.configure(
        items_per_epoch=items_per_epoch(config, accelerator.num_processes),
        max_seq_len=config.run.max_seq_len,
        padded_sampling=replay.padded_sampling,
        # One process edits a buffer (FIFO deletions, quarantine); every other one only re-lists it.
        has_edit_rights=(
            replay.has_dset_edit_rights and not role.only_collects and accelerator.is_main_process
        ),
    )


def relabel_seed(seed: int | None, process: int) -> int | None:
    """The seed of process ``process``'s relabeler: its own stream of the run's seed, apart from the sampler's
    and every other process's (None: unseeded)."""
    if seed is None:
        return None
    return int(np.random.SeedSequence([seed, process, RELABEL_STREAM]).generate_state(1)[0])


@contextlib.contextmanager
def removing_new_folders(folders: Callable[[], list[Path]], on_failure: Callable[[], None]) -> Iterator[None]:
    """On a failure inside, calls ``on_failure`` (the experiment closes), then removes the ``folders()`` that did
    not exist on entry and hold no file (asked again then: several processes may have agreed on other ones), and
    re-raises: a failed start leaves no empty run folder behind."""
    existed = {path for path in folders() if path.exists()}
    try:
        yield
    except BaseException:
        on_failure()
        for folder in folders():
            if folder not in existed:
                remove_empty_dirs(folder)
        raise


def remove_empty_dirs(root: Path) -> None:
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
