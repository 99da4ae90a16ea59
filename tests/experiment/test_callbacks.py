"""pluggy callbacks during a real run: evaluation and epoch-end hooks fire with metrics and can stop the run."""

from __future__ import annotations

from amago import Experiment
from amago_core.config.sources import load_config

HOOKS = """
from amago_core.hooks import hookimpl

CALLS = []

@hookimpl
def amago_on_evaluation(split, metrics):
    CALLS.append(("evaluation", split, metrics["Average Total Return (Across All Env Names)"]))

@hookimpl
def amago_on_epoch_end(experiment, epoch, metrics):
    CALLS.append(("epoch_end", epoch, sorted(k for k in metrics if k.startswith(("val/", "train/")))[:1]))
    if epoch == 1:
        experiment.request_stop()

@hookimpl
def amago_on_checkpoint(epoch, path):
    CALLS.append(("checkpoint", epoch, path.name))
"""


def test_callbacks_fire_with_metrics_and_stop_the_run(fake_distribution, tiny_job):
    fake_distribution(
        "amago-plugin-callbacks",
        entry_points={"amago": {"recorder": "recorder_pkg.hooks"}},
        modules={"recorder_pkg/__init__.py": "", "recorder_pkg/hooks.py": HOOKS},
    )
    experiment = Experiment(load_config(base=tiny_job, environ={}), epochs=5)
    experiment.start()
    try:
        experiment.learn()
    finally:
        experiment.close()
    import recorder_pkg.hooks as recorder

    kinds = [call[0] for call in recorder.CALLS]
    assert kinds.count("epoch_end") == 2  # stopped after epoch 1 of 5
    assert experiment.epoch == 2
    evaluations = [c for c in recorder.CALLS if c[0] == "evaluation"]
    assert [c[1] for c in evaluations] == ["val", "val"]
    epoch_ends = [c for c in recorder.CALLS if c[0] == "epoch_end"]
    assert epoch_ends[0][2] == ["train/Actor Loss"] or epoch_ends[0][2][0].startswith(("train/", "val/"))
    assert ("checkpoint", 0, "tiny_epoch_0") in recorder.CALLS
