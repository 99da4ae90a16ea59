"""What a run records about itself: the config it ran (``config.resolved.json``) and the summary it prints."""

from __future__ import annotations

import shlex
import sys
import time
from typing import Any

from amago_core import file_format
from amago_core.config.components import RELABELER_SLOT, RunComponents
from amago_core.config.experiment import ExperimentConfig
from amago_core.config.sources import PROVENANCE_KEY
from amago_core.config.task_split import write_task_split
from amago_core.experiment.hardware import PrecisionChoice, recorded_cpu_flags
from amago_core.experiment.run_dir import RunPaths, atomic_write_json
from amago_core.rollout.spaces import PolicySpaces


def run_record(
    config: ExperimentConfig, components: RunComponents, *, precision: PrecisionChoice | None = None
) -> dict[str, Any]:
    """The JSON written to ``config.resolved.json``: the config, with a ``_provenance`` section.

    ``amago run -c config.resolved.json`` runs the same experiment again (the provenance is ignored when read). A
    slot that used a Python class records it under ``class`` (such a run reproduces from its script, and reading
    the file says so); one a script registered in-process records the class's path beside its name.

    ``optim.mixed_precision`` holds what was asked for (``auto`` resolves again on another machine);
    ``_provenance.precision`` what it resolved to and why (``precision``: the start's choice, None for a config
    not started), and ``cpu_flags`` which of the flags that decide its speed the CPU has.
    """
    record = config.model_dump(mode="json")
    for slot, resolved in components.slots().items():
        if not resolved.recorded_as_code:
            continue
        if slot == RELABELER_SLOT:  # its config path is replay.relabeler
            record["replay"]["relabeler"] = resolved.record()
        else:
            record[slot] = resolved.record()
    record[PROVENANCE_KEY] = {
        "command": shlex.join(sys.argv),
        "components": components.origins(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu_flags": recorded_cpu_flags(),
        "format": file_format.FORMAT,  # of the files a checkpoint loads from, this one included
    }
    if precision is not None:
        record[PROVENANCE_KEY]["precision"] = precision.record()
    return record


def write_run_files(
    paths: RunPaths, record: dict[str, Any], spaces: PolicySpaces | None, makers: tuple[Any, Any, Any]
) -> None:
    """Writes what a run records about itself into its folder: ``config.resolved.json`` (``record``),
    ``spaces.json`` (so that the policy loads later without building an env; None: an ``init_envs`` override set
    the spaces itself), and which tasks train/val/test draw (``task_split.json``: whether results are on held-out
    tasks)."""
    atomic_write_json(paths.config, record, root=paths.root)
    if spaces is not None:
        atomic_write_json(paths.spaces, spaces.to_json(), root=paths.root)
    write_task_split(paths.root, makers)


def summary_lines(experiment: Any, envs: str) -> list[str]:
    """The lines a started ``experiment`` prints (verbose runs, main process); ``envs``: ``init_envs``' line."""
    config, components, precision = experiment.config, experiment.components, experiment.precision
    accelerator, dataset = experiment.accelerator, experiment.dataset
    trainable_parameters = sum(p.numel() for p in experiment.policy.parameters() if p.requires_grad)
    device, processes = accelerator.device, accelerator.num_processes
    data = dataset.get_description() if dataset is not None else "(evaluation only)"
    sched, optim = config.schedule, config.optim
    chosen = optim.mixed_precision if precision is None else precision.describe()
    grouping = (
        f", length-grouped in pools of {optim.length_group_batches}" if optim.length_group_batches > 1 else ""
    )
    return [
        f"amago run {config.run.name!r} -> {experiment.paths.root}",
        f"  agent {components.agent.name} | tstep {components.tstep_encoder.name} | traj "
        f"{components.traj_encoder.name} | {trainable_parameters:,} trainable parameters | device {device} "
        f"x{processes} | seed {config.run.seed}",
        f"  envs: {envs}",
        f"  data: {data}",
        f"  schedule: {sched.epochs} epochs x ({sched.train_timesteps_per_epoch} steps/actor, "
        f"{sched.train_batches_per_epoch} batches of {optim.batch_size}{grouping}); precision {chosen}",
    ]
