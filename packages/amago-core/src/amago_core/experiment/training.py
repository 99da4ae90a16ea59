"""Training batches: the per-epoch loader, length-grouped pools of windows, and the loss weights they carry."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from torch.utils.data import DataLoader, Dataset

from amago_core.config.experiment import ExperimentConfig
from amago_core.data.batch import Batch, LengthGroupedCollate
from amago_core.data.dataset import RLDataset


def items_per_epoch(config: ExperimentConfig, num_processes: int) -> int:
    """Windows one epoch samples over every process: whole pools of length-grouped batches.

    The last pool of an epoch may be used only in part, so the count rounds up to whole pools.
    """
    optim = config.optim
    pools = math.ceil(config.schedule.train_batches_per_epoch / optim.length_group_batches)
    return pools * optim.length_group_batches * optim.batch_size * num_processes


def train_loader(dataset: RLDataset, config: ExperimentConfig, *, pin_memory: bool) -> DataLoader:
    """A DataLoader over ``dataset`` for one epoch, yielding lists of ``(Batch, loss_weight)`` pairs.

    Each item holds ``length_group_batches`` batches of similar lengths (see
    :class:`~amago_core.data.batch.LengthGroupedCollate`).
    """
    group = config.optim.length_group_batches
    return DataLoader(
        cast(Dataset, dataset),  # an RLDataset has the map-style protocol (len, getitem) without torch's base
        batch_size=config.optim.batch_size * group,
        num_workers=config.distributed.dloader_workers,
        collate_fn=LengthGroupedCollate(group),
        pin_memory=pin_memory,
    )


def weighted_batches(loader: Iterable[Any]) -> Iterator[tuple[Batch, float]]:
    """Flattens a loader's items (``Batch`` or lists of ``(Batch, loss_weight)``) into weighted batches.

    Raises:
        TypeError: the loader yields something else (a broken ``init_dloaders`` override).
    """
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


def wait_until_ready(
    dataset: RLDataset, stopped: Callable[[], bool], say: Callable[[str], None] | None
) -> bool:
    """Polls a dataset that another process fills (its new files) until it is ready to train on, or ``stopped()``;
    ``say`` is told once what it waits for. Returns whether it is ready."""
    announced = False
    while not dataset.ready_for_training and not stopped():
        if say is not None and not announced:
            say(f"waiting for training data: {dataset.not_ready_reason()}")
            announced = True
        time.sleep(2.0)
        rescan = getattr(dataset, "refresh", None) or dataset.on_end_of_collection
        rescan()  # pick up the files other processes wrote meanwhile
    return dataset.ready_for_training


def end_of_collection(dataset: RLDataset, accelerator: Any) -> dict[str, Any]:
    """Tells every process's dataset that the epoch's collection is over, once every process wrote its files;
    returns the main process's dataset metrics ({} on the others).

    The main process edits the buffer (FIFO deletions) first; the others only re-list it (its deletions,
    everyone's new files) and move the same schedules as its call did (a mixture's weights).
    """
    accelerator.wait_for_everyone()
    metrics = dataset.on_end_of_collection() if accelerator.is_main_process else {}
    accelerator.wait_for_everyone()
    if not accelerator.is_main_process:
        dataset.on_end_of_collection()
    return metrics
