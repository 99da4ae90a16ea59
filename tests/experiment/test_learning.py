"""A small seeded T-Maze that the default agent solves in seconds: memory is the only way to a return of 1.0.

The goal side is shown at the first step only; at the junction the observation is the same for both sides, so a
policy without memory averages 0.5 at best.
"""

from __future__ import annotations

import json
import time

from amago.default_job import DEFAULT_JOB
from amago_core.config.sources import load_config
from amago_core.experiment import build_experiment
from amago_core.experiment.metrics import AVERAGE_RETURN_KEY

CORRIDOR = 1


def test_transformer_agent_solves_a_small_tmaze(tmp_path):
    job = json.loads(json.dumps(DEFAULT_JOB))
    job["env"]["corridor_length"] = CORRIDOR
    job["run"].update(max_seq_len=CORRIDOR + 1, seed=1, ckpt_base_dir=str(tmp_path), name="solve")
    job["replay"]["traj_save_len"] = CORRIDOR + 1
    job["tstep_encoder"].update(d_hidden=64, d_output=64)
    job["traj_encoder"].update(d_model=32, n_layers=1, d_ff=64, n_heads=4)
    job["rollout"]["parallel_actors"] = 8
    job["exploration"]["steps_anneal"] = 400
    job["optim"] = {"learning_rate": 5e-4, "lr_warmup_steps": 50}
    job["schedule"].update(
        epochs=40,
        train_timesteps_per_epoch=3 * (CORRIDOR + 1),
        train_batches_per_epoch=20,
        val_interval=2,
        val_timesteps_per_epoch=2 * (CORRIDOR + 1),
        ckpt_interval=None,
    )
    job["logging"] = {"verbose": False, "plot": False}
    experiment = build_experiment(load_config(base=job, environ={}))
    experiment.start()
    history = []
    evaluate = experiment.evaluate_val

    def evaluate_and_stop():
        metrics = evaluate()
        history.append(metrics[AVERAGE_RETURN_KEY])
        if metrics[AVERAGE_RETURN_KEY] >= 0.999:
            experiment.request_stop()
        return metrics

    experiment.evaluate_val = evaluate_and_stop
    start = time.perf_counter()
    try:
        experiment.learn()
    finally:
        experiment.close()
    assert history[-1] >= 0.999, f"not solved in {experiment.epochs} epochs: val returns {history}"
    assert history[0] < 0.999  # it had to learn: the untrained policy does not solve it
    assert time.perf_counter() - start < 120
