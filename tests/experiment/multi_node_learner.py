"""Test helper, started by ``accelerate launch``: trains a job in this process, then writes what it learned.

Usage::

    accelerate launch ... multi_node_learner.py JOB_JSON OUT_DIR EPOCHS [--resume]

Builds ``Experiment(job, epochs=EPOCHS)``, starts it (continuing the run's newest training state with
``--resume``), learns, and writes ``OUT_DIR/process_{i}.npz``: every parameter of ``experiment.policy`` by name,
plus ``__updates__`` (optimiser updates) and ``__epoch__`` (the next epoch to run). tests/experiment/
test_multi_node.py compares the files of the processes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from amago import Experiment


def main(job_file: str, out_dir: str, epochs: str, *flags: str) -> None:
    experiment = Experiment(json.loads(Path(job_file).read_text()), epochs=int(epochs))
    experiment.start(resume="--resume" in flags)
    try:
        experiment.learn()
    finally:
        experiment.close()
    arrays = {name: p.detach().cpu().numpy() for name, p in experiment.policy.named_parameters()}
    arrays["__updates__"] = np.array(experiment.grad_update_counter)
    arrays["__epoch__"] = np.array(experiment.epoch)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / f"process_{experiment.accelerator.process_index}.npz", **arrays)


if __name__ == "__main__":
    main(*sys.argv[1:])
