"""The experiment loop: ``Experiment`` (AMAGO's API over one ``ExperimentConfig``).

Importing this package imports torch and accelerate; the CLI imports it only inside `amago run`/`eval`.
"""

from amago_core.experiment.experiment import Experiment, build_experiment

__all__ = ["Experiment", "build_experiment"]
