"""Training batches: the per-epoch loader, length-grouped pools of windows, and the loss weights they carry."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
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
