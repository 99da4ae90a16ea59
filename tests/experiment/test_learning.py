"""A small seeded T-Maze that the default agent solves in seconds: memory is the only way to a return of 1.0.

The goal side is shown at the first step only; at the junction the observation is the same for both sides, so a
policy without memory averages 0.5 at best.
"""

from __future__ import annotations

import pytest

from amago import Experiment
from amago_core.config.sources import load_config
from tests.experiment.conftest import learnable_tmaze_job, stop_when_solved

CORRIDOR = 1


@pytest.mark.slow
def test_transformer_agent_solves_a_small_tmaze(tmp_path):
    job = learnable_tmaze_job(tmp_path, CORRIDOR, "solve", steps_anneal=400)
    experiment = Experiment(load_config(base=job, environ={}))
    experiment.start()
    history = stop_when_solved(experiment)
    try:
        experiment.learn()
    finally:
        experiment.close()
    assert history[-1] >= 0.999, f"not solved in {experiment.epochs} epochs: val returns {history}"
    assert history[0] < 0.999  # it had to learn: the untrained policy does not solve it
    # No wall-time bound: the job's epochs bound the learning, and how fast it runs is bench/learn.py's figure
    # (a timed assertion fails on a slow or busy machine, not on a regression).
