"""AMAGO's ``RLData`` and ``RLDataset`` as AMAGO users write datasets of their own (offline data, demos).

AMAGO's datasets return ``RLData(obs, rews, dones, actions, time_idxs)`` built from torch tensors, with the
previous-reward-and-action inputs (``rl2s``) left out to be derived, and override ``on_end_of_collection(self,
experiment)``. Here ``RLData`` takes the same arguments (tensors or arrays, ``rl2s`` optional) and is amago-core's
numpy ``RLData``; ``RLDataset`` is amago-core's base class with AMAGO's ``configure_from_experiment`` and
``check_configured``, and a subclass's ``on_end_of_collection(self, experiment)`` is given the experiment that
trains on it. Sampling, windows and padding are amago-core's.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from amago_core.data import dataset, rldata


def _array(value: Any, dtype: Any = None) -> np.ndarray:
    """A numpy array of a tensor (moved to the CPU) or array-like."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)


class RLData(rldata.RLData):
    """AMAGO's ``RLData(obs, rews, dones, actions, time_idxs, rl2s=None)``: one training sequence of T timesteps.

    Args:
        obs: key -> ``(T, ...)`` tensor or array.
        rews: ``(T - 1, 1)`` rewards.
        dones: ``(T - 1, 1)`` terminated flags.
        actions: ``(T - 1, action dim)``.
        time_idxs: ``(T, 1)`` time index of each timestep in its episode.
        rl2s: ``(T, 1 + action dim)`` previous reward and action; None derives them by shifting ``rews`` and
            ``actions`` (zeros first), as AMAGO did.
    """

    def __init__(
        self,
        obs: dict[str, Any],
        rews: Any,
        dones: Any,
        actions: Any,
        time_idxs: Any,
        rl2s: Any = None,
    ) -> None:
        made = rldata.RLData.from_arrays(
            obs={key: _array(value) for key, value in obs.items()},
            rews=_array(rews, np.float32),
            dones=_array(dones, bool),
            actions=_array(actions, np.float32),
            time_idxs=_array(time_idxs, np.int64),
            rl2s=None if rl2s is None else _array(rl2s, np.float32),
        )
        super().__init__(made.obs, made.rews, made.dones, made.actions, made.time_idxs, made.rl2s)


_TRAINED_BY: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
"""``id(dataset)`` -> the ``amago.Experiment`` given it (what AMAGO passed to ``on_end_of_collection``)."""


def remember_experiment(data: Any, experiment: Any) -> None:
    """Records that ``experiment`` trains on ``data`` (and on a mixture's datasets)."""
    for one in (data, *getattr(data, "datasets", ())):
        _TRAINED_BY[id(one)] = experiment


def _with_experiment(hook: Callable[..., Any]) -> Callable[..., Any]:
    """A subclass's ``on_end_of_collection(self, experiment)`` as amago calls it (``dataset.on_end_of_collection()``)."""

    @functools.wraps(hook)
    def on_end_of_collection(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return hook(self, *args, **kwargs)
        return hook(self, _TRAINED_BY.get(id(self)))

    return on_end_of_collection


class RLDataset(dataset.RLDataset):
    """AMAGO's ``RLDataset(dset_name)``: subclass it and implement ``sample_random_trajectory`` (an ``RLData``),
    ``get_description`` and the ``save_new_trajs_to`` property, as in AMAGO. Every amago-core dataset
    (``DiskTrajDataset``, ``MixtureOfDatasets``) counts as one."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        hook = cls.__dict__.get("on_end_of_collection")
        if callable(hook) and len(inspect.signature(hook).parameters) >= 2:
            cls.on_end_of_collection = _with_experiment(hook)  # type: ignore[method-assign]

    @classmethod
    def __subclasshook__(cls, other: type) -> bool | Any:
        # Through the MRO: ``issubclass`` against amago-core's ABC would ask this hook again.
        if cls is RLDataset and dataset.RLDataset in getattr(other, "__mro__", ()):
            return True
        return NotImplemented

    def configure_from_experiment(self, experiment: Any) -> None:
        """AMAGO's: ``configure`` with the experiment's batches per epoch, batch size, window and sampling."""
        config = experiment.config
        self.configure(
            items_per_epoch=config.schedule.train_batches_per_epoch
            * config.optim.batch_size
            * experiment.accelerator.num_processes,
            max_seq_len=config.run.max_seq_len,
            padded_sampling=config.replay.padded_sampling,
            has_edit_rights=config.replay.has_dset_edit_rights,
        )

    def check_configured(self) -> None:
        """AMAGO's check.

        Raises:
            ValueError: ``configure`` has not run.
        """
        if not self.configured:
            msg = "Dataset not configured. Call `configure_from_experiment()` first."
            raise ValueError(msg)


__all__ = ["RLData", "RLDataset", "remember_experiment"]
