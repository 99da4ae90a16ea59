"""Measure what a config costs on this machine, so that ``amago run --budget 10m`` can size it.

A throw-away copy of the run (same envs, model, batch size and sequence length, in a temporary folder) starts,
collects one sequence length of env steps into its own buffer and takes a few gradient updates on what it
collected. The timings of that copy are the :class:`~amago_tools.sizing.budget.Costs` of the real run; the copy
and its folder are removed afterwards.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from amago_core.config.experiment import ExperimentConfig
from amago_core.config.lengths import longest_sample, window_within_files
from amago_core.config.sources import deep_merge
from amago_tools.sizing.budget import Costs

PROBE_STEPS_CAP = 300
"""Most env steps per actor the probe collects (long sequence lengths are timed on shorter windows)."""
WARMUP_UPDATES = 1
"""Updates run before timing (first-call allocations and kernel choices)."""
TIMED_UPDATES = 3
"""Updates timed (the median counts): few, because on a CPU one update of a large preset takes seconds."""


def probe_config(config: ExperimentConfig, folder: str) -> ExperimentConfig:
    """The throw-away copy of ``config``'s run that the calibration times, writing into ``folder``.

    It collects one window (at most :data:`PROBE_STEPS_CAP` steps per actor) into files of exactly that window
    and trains on them; a longer window is cut to those files, as any change of lengths is
    (:func:`~amago_core.config.lengths.window_within_files`), and the costs say what length was timed.
    """
    steps = min(longest_sample(config) + 1, PROBE_STEPS_CAP)
    changes: dict[str, Any] = {
        "run": {"name": "calibrate", "ckpt_base_dir": folder},
        # Files of exactly one window: the probe's updates see full-length sequences, as the run's will.
        "replay": {
            "dset_root": folder,
            "dset_name": "calibrate",
            "traj_save_len": steps,
            "stagger_traj_file_lengths": False,
            "dset_min_size": 1,
        },
        "schedule": {
            "epochs": 1,
            "train_timesteps_per_epoch": steps,
            "train_batches_per_epoch": WARMUP_UPDATES + TIMED_UPDATES,
            "val_interval": None,
            "ckpt_interval": None,
            "rolling_state": False,
            "always_save_latest": False,
            "max_minutes": None,
        },
        "logging": {"log_to_wandb": False, "verbose": False, "plot": False},
    }
    # A throw-away copy: no user value to keep, the window always yields to the probe's files.
    changes = deep_merge(changes, window_within_files(config, changes, user={}))
    return ExperimentConfig.model_validate(deep_merge(config.model_dump(mode="json"), changes)).resolved()


def _time_updates(experiment: Any) -> float:
    from amago_core.experiment.training import weighted_batches

    loader = experiment.init_dloaders()
    experiment.policy_aclr.train()
    timings: list[float] = []
    started = time.perf_counter()
    for batch, weight in weighted_batches(loader):
        if len(timings) >= WARMUP_UPDATES + TIMED_UPDATES:
            break
        experiment.train_step(batch, log_step=False, loss_weight=weight)
        now = time.perf_counter()
        timings.append(now - started)
        started = now
    if not timings:
        msg = "the calibration run collected no trajectory to train on; pass --steps N instead of --budget."
        raise RuntimeError(msg)
    timed = timings[WARMUP_UPDATES:] or timings
    return sorted(timed)[len(timed) // 2]


def time_probe(probe: ExperimentConfig) -> Costs:
    """Runs the probe (see :func:`probe_config`) and times its start, its env steps and its updates.

    The one place the calibration touches the machine (tests stand in for it here).

    Raises:
        RuntimeError: the probe collected nothing to train on.
    """
    from amago_core.experiment import Experiment

    steps = probe.schedule.train_timesteps_per_epoch
    started = time.perf_counter()
    experiment = Experiment(probe)
    try:
        experiment.start()
        startup = time.perf_counter() - started
        started = time.perf_counter()
        experiment.collect_new_training_data()
        per_pool_step = (time.perf_counter() - started) / steps
        if experiment.dataset is not None:  # the buffer takes in the new files, as each epoch does
            experiment.dataset.on_end_of_collection()
        per_update = _time_updates(experiment)
    finally:
        experiment.close()
    return Costs(
        seconds_per_pool_step=per_pool_step,
        seconds_per_update=per_update,
        startup_seconds=startup,
        sequence_length=longest_sample(probe),
    )


def measure_costs(config: ExperimentConfig) -> Costs:
    """Starts a throw-away copy of ``config``'s run in a temporary folder and times it (see :func:`time_probe`).

    Raises:
        RuntimeError: the copy collected nothing to train on.
    """
    with tempfile.TemporaryDirectory(prefix="amago-calibrate-") as folder:
        return time_probe(probe_config(config, folder))
