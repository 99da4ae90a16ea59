"""The experiment loop: ``Experiment`` (AMAGO's API) and the builder that makes one from an ``ExperimentConfig``.

Importing this package imports torch and accelerate; the CLI imports it only inside `amago run`/`eval`.
"""

from amago_core.experiment.builder import build_experiment
from amago_core.experiment.experiment import EXPERIMENT_FIELDS, Experiment

__all__ = ["EXPERIMENT_FIELDS", "Experiment", "build_experiment"]
