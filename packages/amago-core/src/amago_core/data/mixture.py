"""``MixtureOfDatasets``: samples each item from one of several datasets by weight.

A child that is not ready yet has weight 0. Optionally its weight ramps linearly from an initial value to its
final one over ``smooth_sudden_starts`` epochs after it becomes ready, so that a dataset joining late (fresh
online data next to an offline set) does not swing the training distribution in one step.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from amago_core.data.dataset import DatasetNotReadyError, RLDataset
from amago_core.data.rldata import PaddedSampling, RLData


class MixtureOfDatasets(RLDataset):
    """Weighted mixture of datasets.

    Args:
        datasets: the children; at most one may take new trajectories (``save_new_trajs_to``).
        sampling_weights: final weights, one per child, summing to 1.
        initial_sampling_weights: weights when each child becomes ready (default: the final weight for a child
            ready when the mixture is configured, 0 for one that becomes ready later, as AMAGO does).
        smooth_sudden_starts: epochs over which a weight ramps from initial to final (None: no ramp).
        dset_name: logging name.
        seed: sampling seed.
    """

    def __init__(
        self,
        datasets: Sequence[RLDataset],
        sampling_weights: Sequence[float],
        initial_sampling_weights: Sequence[float] | None = None,
        smooth_sudden_starts: int | None = None,
        dset_name: str | None = None,
        seed: int | None = None,
    ) -> None:
        super().__init__(dset_name=dset_name, seed=seed)
        if len(datasets) != len(sampling_weights) or not datasets:
            msg = f"give one sampling weight per dataset; got {len(datasets)} datasets, {len(sampling_weights)} weights."
            raise ValueError(msg)
        if abs(sum(sampling_weights) - 1.0) > 1e-6 or min(sampling_weights) < 0:
            msg = f"sampling_weights must be >= 0 and sum to 1; got {list(sampling_weights)}."
            raise ValueError(msg)
        if initial_sampling_weights is not None and len(initial_sampling_weights) != len(datasets):
            msg = "initial_sampling_weights needs one weight per dataset."
            raise ValueError(msg)
        writers = [d.dset_name for d in datasets if d.save_new_trajs_to is not None]
        if len(writers) > 1:
            msg = f"at most one dataset in a mixture may take new trajectories; these all do: {writers}."
            raise ValueError(msg)
        self.datasets = list(datasets)
        for dataset in self.datasets:
            dataset.draws_from = self  # one saved stream for the choice of child and each child's sampling
        self.final_weights = np.asarray(sampling_weights, dtype=np.float64)
        self.given_initial_weights = initial_sampling_weights is not None
        self.initial_weights = (
            np.asarray(initial_sampling_weights, dtype=np.float64)
            if initial_sampling_weights is not None
            else self.final_weights.copy()
        )
        self.smooth_sudden_starts = smooth_sudden_starts
        self.epoch = 0
        self.ready_since: list[int | None] = [None] * len(self.datasets)
        self.current_weights = np.zeros(len(self.datasets))

    def seed_for_process(self, process: int) -> None:
        """The mixture's own choice of dataset and every member's sampling get a stream per process."""
        super().seed_for_process(process)
        for dataset in self.datasets:
            dataset.seed_for_process(process)

    def configure(
        self,
        items_per_epoch: int,
        max_seq_len: int | None,
        padded_sampling: PaddedSampling = "none",
        has_edit_rights: bool = True,
    ) -> None:
        """Configures the mixture and every child."""
        super().configure(items_per_epoch, max_seq_len, padded_sampling, has_edit_rights)
        for d in self.datasets:
            d.configure(items_per_epoch, max_seq_len, padded_sampling, has_edit_rights)
        if not self.given_initial_weights:
            # A child that joins later (fresh online data) ramps up from 0 instead of arriving at full weight.
            self.initial_weights = self._ready_only(self.final_weights)
        self._update_weights()

    @property
    def save_new_trajs_to(self) -> Path | None:
        """The one child that takes new trajectories, if any."""
        return next((d.save_new_trajs_to for d in self.datasets if d.save_new_trajs_to is not None), None)

    def not_ready_reason(self) -> str | None:
        """Ready when any child is."""
        base = super().not_ready_reason()
        if base is not None:
            return base
        reasons = [d.not_ready_reason() for d in self.datasets]
        if all(r is not None for r in reasons):
            return "no dataset in the mixture is ready: " + "; ".join(str(r) for r in reasons)
        return None

    def _ready_only(self, weights: np.ndarray) -> np.ndarray:
        """``weights`` with 0 for every child not ready for training."""
        return np.array(
            [w if d.ready_for_training else 0.0 for d, w in zip(self.datasets, weights, strict=True)]
        )

    def _update_weights(self) -> None:
        weights = np.zeros(len(self.datasets))
        for i, d in enumerate(self.datasets):
            if not d.ready_for_training:
                continue
            since = self.ready_since[i]
            if since is None:
                since = self.ready_since[i] = self.epoch
            w0, w1 = self.initial_weights[i], self.final_weights[i]
            if self.smooth_sudden_starts:
                progress = (self.epoch - since + 1) / self.smooth_sudden_starts
                weights[i] = np.clip(w0 + (w1 - w0) * progress, min(w0, w1), max(w0, w1))
            else:
                weights[i] = w1
        self.current_weights = weights

    def on_end_of_collection(self) -> dict[str, Any]:
        """Updates every child, then the weights; child metrics are prefixed with the child's name."""
        metrics: dict[str, Any] = {}
        for d in self.datasets:
            metrics.update({f"{d.dset_name} {k}": v for k, v in d.on_end_of_collection().items()})
        self._update_weights()
        total = self.current_weights.sum()
        for d, w in zip(self.datasets, self.current_weights, strict=True):
            metrics[f"{d.dset_name} Current Sample Weight"] = float(w)
            metrics[f"{d.dset_name} Normalized Sample Weight"] = float(w / total) if total > 0 else 0.0
        self.epoch += 1
        return metrics

    def refresh(self) -> None:
        """Re-lists every child that lists files and recomputes the weights, without moving the schedule on an
        epoch (what a process polling for data that others write calls every few seconds)."""
        for d in self.datasets:
            refresh = getattr(d, "refresh", None)
            if callable(refresh):
                refresh()
        self._update_weights()

    def sample_random_trajectory(self) -> RLData:
        """A trajectory from a child drawn by the current (renormalised) weights."""
        weights = self._ready_only(self.current_weights)
        if weights.sum() <= 0:
            raise DatasetNotReadyError(
                self.not_ready_reason() or "every ready dataset has weight 0 this epoch"
            )
        child = self.datasets[int(self.rng.choice(len(weights), p=weights / weights.sum()))]
        return child.sample_random_trajectory()

    def delete(self) -> None:
        """Deletes every child's data."""
        for d in self.datasets:
            d.delete()

    def get_description(self) -> str:
        """One line per child."""
        lines = [f"MixtureOfDatasets {self.dset_name!r}:"]
        lines += [
            f"  w={w:.3f}  {d.get_description()}"
            for d, w in zip(self.datasets, self.final_weights, strict=True)
        ]
        return "\n".join(lines)
