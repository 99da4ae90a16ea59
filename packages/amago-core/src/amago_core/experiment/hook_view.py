"""The view of a running experiment that the experiment hooks receive (``amago_core.hooks.RunView``).

Hooks get the run's settings, folder and progress and ``request_stop()``, not the experiment: a plugin cannot come
to depend on the loop's internals. Plugin API 1 handed hooks the experiment itself, so any other attribute still
resolves, with a ``DeprecationWarning`` naming it, until amago-core 0.3 (the plugin guide's deprecation table).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from amago_core.experiment.counters import read_only
from amago_core.hooks.specs import RunView

if TYPE_CHECKING:
    from amago_core.experiment.run_dir import RunPaths

VIEW_NAMES = tuple(name for name in vars(RunView) if not name.startswith("_"))
"""What a hook may use of the experiment: the members of the ``RunView`` protocol, in its order."""


class HookView:
    """An experiment as its hooks see it (implements :class:`amago_core.hooks.RunView`)."""

    def __init__(self, experiment: RunView) -> None:
        self._experiment = experiment

    config: Any = read_only("_experiment", "config", "The run's validated config.")
    paths: RunPaths = read_only("_experiment", "paths", "The run folder's paths.")
    epoch: int = read_only("_experiment", "epoch", "The epoch running (or just finished).")
    total_frames: int = read_only(
        "_experiment", "total_frames", "Env steps collected so far, over every process."
    )
    grad_update_counter: int = read_only("_experiment", "grad_update_counter", "Optimiser updates so far.")

    def request_stop(self) -> None:
        """Ends the run after the current epoch."""
        self._experiment.request_stop()

    def __getattr__(self, name: str) -> Any:
        # Only names the view lacks get here: plugin API 1's hooks read the experiment itself.
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._experiment, name)
        warnings.warn(
            f"experiment.{name} in an amago hook: hooks receive a RunView ({', '.join(VIEW_NAMES)}); reading "
            "other attributes of the experiment is deprecated and stops working in amago-core 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        return value
