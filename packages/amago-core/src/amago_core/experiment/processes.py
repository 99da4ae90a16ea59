"""What one process of a run does (its mode), and how processes share results under data parallelism."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object

from amago_core.config.experiment import ExperimentConfig


@dataclass(frozen=True)
class ProcessRole:
    """The share of the work a process takes, from ``run.mode`` (AMAGO's async mode, reference §2.8).

    ``both`` collects and learns; ``collect`` acts with the latest weights the learner wrote and fills the
    shared buffer; ``learn`` trains from the buffer others fill, writing the latest weights for them.

    Attributes:
        collects: steps the train envs and writes trajectories.
        learns: takes gradient steps and writes checkpoints.
        evaluates: runs validation (the learner leaves it to the collectors, which have the envs).
    """

    collects: bool
    learns: bool
    evaluates: bool

    @classmethod
    def of(cls, config: ExperimentConfig) -> ProcessRole:
        mode = config.run.mode
        return cls(collects=mode != "learn", learns=mode != "collect", evaluates=mode != "learn")

    @property
    def only_collects(self) -> bool:
        """A collect-only process: reads ``latest`` every epoch, never deletes buffer files, never writes the config."""
        return self.collects and not self.learns

    @property
    def only_learns(self) -> bool:
        """A learn-only process: waits for data instead of skipping the epoch, always writes ``latest``."""
        return self.learns and not self.collects


def default_torch_threads(num_processes: int = 1) -> int:
    """Half the cores per training process, at least one.

    Small models step one env batch at a time; with OpenMP threads on every core they fight the env code,
    data loading and each other, and a 7 ms policy step was measured taking 200-800 ms on 2 busy cores.
    """
    return max(1, (os.cpu_count() or 1) // (2 * max(num_processes, 1)))


@contextlib.contextmanager
def torch_threads_while(threads: int | None) -> Iterator[None]:
    """torch's CPU threads set to ``threads`` inside the block and restored after it (None: left as they are).

    The policy acts with fewer threads than the update trains with (``rollout.policy_threads``): switching the
    count costs microseconds, once per interaction.
    """
    before = torch.get_num_threads()
    if threads is None or threads == before:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def gather(accelerator: Accelerator, obj: Any) -> list[Any]:
    """``obj`` from every process, in process order (just ``[obj]`` in a single-process run)."""
    if accelerator.num_processes == 1:
        return [obj]
    return gather_object([obj])


def average_over_processes(accelerator: Accelerator, metrics: dict[str, float]) -> dict[str, float]:
    """Each metric averaged over the processes that report it (AMAGO averages val metrics this way)."""
    parts = gather(accelerator, metrics)
    if len(parts) == 1:
        return metrics
    merged: dict[str, list[float]] = {}
    for part in parts:
        for key, value in part.items():
            merged.setdefault(key, []).append(value)
    return {key: float(np.mean(values)) for key, values in merged.items()}
