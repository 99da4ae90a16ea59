"""Issue 40, item 3: core's ``Experiment`` is the loop over a plan or config, AMAGO's flat names are
``amago.Experiment``'s, and the progress counters are one value restored in one place."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest

import amago
from amago.from_amago.flat import flat_names
from amago_core.config.sources import load_config
from amago_core.experiment import Experiment
from amago_core.experiment.checkpoints import Progress
from amago_core.experiment.counters import RunCounters
from amago_core.experiment.metrics import WALL_TIME_KEY

CORE = Path(__file__).resolve().parents[2] / "packages" / "amago-core" / "src" / "amago_core"


def test_core_refuses_a_flat_keyword_in_one_line_naming_its_config_key_and_the_compatibility_class(tiny_job):
    config = load_config(base=tiny_job, environ={})
    with pytest.raises(TypeError) as refused:
        Experiment(config, learning_rate=3e-4)
    line = str(refused.value)
    assert "\n" not in line
    assert "'learning_rate'" in line
    assert "optim.learning_rate" in line
    assert "amago.Experiment" in line
    with pytest.raises(TypeError, match=r"schedule\.epochs"):
        Experiment(config, epochs=3)
    with pytest.raises(TypeError, match=r"run\.name"):
        Experiment(config, run_name="x")


def test_core_takes_classes_by_slot_and_refuses_an_unknown_slot(tiny_job):
    from amago_nets.traj_rnn import GRUTrajEncoder

    config = load_config(base=tiny_job, environ={})
    experiment = Experiment(config, classes={"traj_encoder": GRUTrajEncoder})
    assert experiment.components.traj_encoder.name == "rnn"
    with pytest.raises(ValueError, match=r"names no component slot.*did you mean 'traj_encoder'"):
        Experiment(config, classes={"traj_encoder_type": GRUTrajEncoder})


def test_core_reads_no_flat_name():
    names = set(flat_names())
    core_class = {name for name in vars(Experiment) if not name.startswith("__")}
    # Names the class defines are its own API; a flat setting would only be reachable through __getattr__.
    assert not hasattr(Experiment, "__getattr__")
    assert not hasattr(Experiment, "apply_settings")
    assert "__setattr__" not in vars(Experiment)
    assert not ({"batch_size", "learning_rate", "run_name", "traj_encoder_type"} & core_class)
    assert "batch_size" in names  # the table itself lives in the compatibility layer


def test_the_compatibility_class_maps_flat_names_both_ways(tmp_path):
    experiment = amago.Experiment(env="tmaze-passive", ckpt_base_dir=tmp_path, batch_size=5, run_name="flat")
    assert isinstance(experiment, Experiment)
    # keyword -> config
    assert experiment.config.optim.batch_size == 5
    assert experiment.config.run.name == "flat"
    # config -> attribute
    assert experiment.batch_size == 5
    assert experiment.run_name == "flat"
    assert experiment.epochs == experiment.config.schedule.epochs
    with pytest.raises(AttributeError, match=r"pass epochs=\.\.\. to Experiment\(\.\.\.\)"):
        experiment.epochs = 2
    experiment.apply_settings(epochs=2, traj_encoder_type="gru")
    assert experiment.config.schedule.epochs == experiment.epochs == 2
    assert experiment.components.traj_encoder.name == "rnn"
    # Keywords win over a given config, as in AMAGO's compatibility.
    over = amago.Experiment(experiment.config, batch_size=7)
    assert over.config.optim.batch_size == 7
    assert over.config.run.name == "flat"


def test_the_counters_are_read_only_on_the_experiment(tiny_job):
    experiment = Experiment(load_config(base=tiny_job, environ={}))
    for name in ("epoch", "total_frames", "grad_update_counter", "stopped_by"):
        with pytest.raises(AttributeError):
            setattr(experiment, name, 1)
    assert (experiment.epoch, experiment.total_frames, experiment.grad_update_counter) == (0, 0, 0)


def test_the_counters_restore_in_one_place():
    counters = RunCounters()
    counters.count_frames([{"a": 3}, {"a": 1, "b": 2}])
    counters.count_update()
    assert (counters.total_frames, counters.frames_by_env_name, counters.grad_update_counter) == (
        6,
        {"a": 4, "b": 2},
        1,
    )
    recorded = counters.record(num_processes=2, logger_step=9)
    assert (recorded.epoch, recorded.total_frames, recorded.num_processes, recorded.logger_step) == (
        0,
        6,
        2,
        9,
    )

    saved = Progress(
        epoch=4, grad_update_counter=7, total_frames=11, frames_by_env_name={"x": 11}, wall_seconds=5.0
    )
    counters.restore(saved, next_epoch=True)
    assert (counters.epoch, counters.grad_update_counter, counters.total_frames) == (5, 7, 11)
    assert counters.frames_by_env_name == {"x": 11}
    assert counters.training_wall_seconds == 5.0  # the clock continues where the state left it
    counters.start_learning()
    time.sleep(0.01)
    assert counters.training_wall_seconds > 5.0
    assert counters.learn_start_counts == (11, 7)
    counters.stop_learning()
    assert counters.wall_seconds is not None
    assert counters.learn_seconds is None
    axes = counters.x_axes()
    assert axes["Epoch"] == 5
    assert axes["total_frames-x"] == 11
    assert axes[WALL_TIME_KEY] >= 5.0
    assert WALL_TIME_KEY not in RunCounters().x_axes(
        evaluation_only=True
    )  # an evaluation has no training clock


COUNTER_FIELDS = {"epoch", "total_frames", "grad_update_counter", "frames_by_env_name", "_wall_seconds_done"}


def test_nothing_in_core_assigns_an_experiments_counters():
    # The counters change through RunCounters' own methods only: no module assigns them on another object.
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                for part in ast.walk(target):
                    owner = part.value if isinstance(part, ast.Attribute) else None
                    if (
                        isinstance(part, ast.Attribute)
                        and part.attr in COUNTER_FIELDS
                        and isinstance(owner, ast.Name)
                        and owner.id in {"experiment", "exp", "run"}
                    ):
                        offenders.append(f"{path.relative_to(CORE)}:{node.lineno}")
    assert not offenders
