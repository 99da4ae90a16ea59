"""Remote collectors: objects that do a run's train collection somewhere else than in this process's env pool.

The loop asks ``experiment.collector`` for an epoch's data when one is set and steps its own pool otherwise, so a
backend (Ray, ...) plugs in here without the loop naming any of its types. The default run builds none and
imports nothing of any backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch


@dataclass
class CollectedData:
    """What one epoch of remote collection added to the buffer.

    Attributes:
        frames_by_env_name: env steps taken, by env name (the loop's ``total_frames`` counters).
        files: trajectory files written into the buffer.
        failed_workers: workers whose share of this epoch was lost (they died; the backend restarts them).
    """

    frames_by_env_name: dict[str, int] = field(default_factory=dict)
    files: int = 0
    failed_workers: list[int] = field(default_factory=list)


class Collector(Protocol):
    """Does an experiment's train collection: finished trajectories land in its buffer folder."""

    @property
    def evaluates(self) -> bool:
        """Whether validation runs on the collector's workers too (then the learner builds no val envs)."""
        ...

    def sync_weights(self, policy: torch.nn.Module, epoch: int) -> None:
        """Offers the current weights before an epoch's collection (the collector decides when to ship them)."""
        ...

    def collect(self, epoch: int, timesteps: int) -> CollectedData:
        """Steps every remote env pool ``timesteps`` times and writes the finished trajectories to the buffer."""
        ...

    def evaluate(self, timesteps: int) -> dict[str, float] | None:
        """Validation metrics of the current weights, averaged over the workers (None: every worker failed)."""
        ...

    def close(self) -> None:
        """Stops the remote workers (and the cluster, if the collector started it)."""
        ...


COLLECTORS_GROUP = "amago.collectors"
"""Entry-point group of remote collector backends: ``name = "module:factory"``, the factory taking the experiment
(``ray = "amago_ray.collector:RayCollector.for_experiment"``, from the amago-ray distribution)."""


def build_collector(experiment: Any) -> Collector | None:
    """The collector ``experiment``'s config asks for, or None to collect in this process (``ray.actors == 0``).

    The backend is found through its entry point (:data:`COLLECTORS_GROUP`), so the loop imports none of them.
    """
    if experiment.config.ray.actors == 0:
        return None
    found = entry_points(group=COLLECTORS_GROUP, name="ray")
    if not found:
        from amago_core.optional import MissingOptionalDependencyError

        msg = (
            f"ray.actors > 0 needs a 'ray' collector backend (none is registered under the {COLLECTORS_GROUP!r} "
            "entry points): pip install amago-ray (or 'amago[ray]')"
        )
        raise MissingOptionalDependencyError(msg, name="ray")
    factory: Callable[[Any], Collector] = next(iter(found)).load()
    return factory(experiment)
