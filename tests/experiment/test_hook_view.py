"""The experiment hooks receive a narrow view of the run (``RunView``), not the experiment; what plugin API 1 read
beyond it still resolves, with a DeprecationWarning naming the attribute."""

from __future__ import annotations

import warnings

from amago import Experiment
from amago_core.config.sources import load_config
from amago_core.hooks import RunView

HOOKS = """
import warnings

from amago_core.hooks import RunView, hookimpl

SEEN = []

@hookimpl
def amago_on_epoch_end(experiment, epoch, metrics):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy = experiment.policy  # an API-1 plugin reading past the view
    SEEN.append(
        {
            "is_view": isinstance(experiment, RunView),
            "epoch": (experiment.epoch, epoch),
            "frames": experiment.total_frames,
            "updates": experiment.grad_update_counter,
            "run_dir": experiment.paths.root,
            "epochs": experiment.config.schedule.epochs,
            "policy": policy,
            "warnings": [(w.category.__name__, str(w.message)) for w in caught],
        }
    )
"""


def test_hooks_get_a_run_view_and_reading_past_it_is_deprecated(fake_distribution, tiny_job):
    fake_distribution(
        "amago-plugin-viewer",
        entry_points={"amago": {"viewer": "viewer_pkg.hooks"}},
        modules={"viewer_pkg/__init__.py": "", "viewer_pkg/hooks.py": HOOKS},
    )
    experiment = Experiment(load_config(base=tiny_job, environ={}), epochs=1)
    experiment.start()
    try:
        experiment.learn()
    finally:
        experiment.close()
    import viewer_pkg.hooks as viewer

    (seen,) = viewer.SEEN
    assert seen["is_view"]
    assert not isinstance(experiment.hook_view, Experiment)
    assert seen["epoch"] == (0, 0)
    assert seen["frames"] == experiment.total_frames
    assert seen["updates"] == experiment.grad_update_counter
    assert seen["run_dir"] == experiment.paths.root
    assert seen["epochs"] == 1
    assert seen["policy"] is experiment.policy
    ((category, message),) = seen["warnings"]
    assert category == "DeprecationWarning"
    assert message.startswith(
        "experiment.policy in an amago hook: hooks receive a RunView (config, paths, epoch,"
    )
    assert "amago-core 0.3" in message


def test_the_experiment_itself_satisfies_the_view_protocol(tiny_job):
    experiment = Experiment(load_config(base=tiny_job, environ={}))
    assert isinstance(experiment, RunView)  # a script may hand its own experiment where a RunView is expected
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert experiment.hook_view.epoch == 0
