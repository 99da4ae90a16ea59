"""The experiment loop: ``Experiment`` over one plan or ``ExperimentConfig`` (AMAGO's flat API: ``amago.Experiment``).

``Experiment`` imports torch and accelerate, so they load on first use: modules of
this package that need neither (``plot``, ``run_dir``) stay cheap to import (``amago plot`` reads no model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from amago_core.experiment.experiment import Experiment

__all__ = ["Experiment"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from amago_core.experiment import experiment

        return getattr(experiment, name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
