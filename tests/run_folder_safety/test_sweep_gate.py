"""`amago sweep --resume` and `amago sweep show` hold a sweep folder to the gate of a run folder.

A sweep folder may come from anyone, like a run folder: a ``trial_N`` that is a symlink (to someone else's run)
or a file, a ``run_dir`` planted in ``study.db``, a linked ``plots/`` or plot, a linked or hard-linked
``study.db``: each is refused in one line or ignored, and no file outside the folder changes. One driver works
on a folder at a time. The sweep folders are written here as `amago sweep` writes them (a record, the config
every trial resolves from, an Optuna study), so that no test waits for a real sweep to make one.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import TINY, amago, snapshot  # noqa: E402

from amago_core.experiment.run_lock import acquire  # noqa: E402
from amago_studies.sweep import (  # noqa: E402
    STUDY_FILE_NAME,
    SWEEP_CONFIG_NAME,
    SWEEP_RECORD_NAME,
)
from amago_studies.sweep_spec import SweepSpec  # noqa: E402

STUDY = "gated"
LEARNING_RATES = [1e-4, 3e-4]


def make_sweep(tmp_path: Path, *, trials: int, finished: int = 0) -> Path:
    """A sweep folder of the tiny job searching the learning rate, whose study holds ``finished`` finished
    trials (and asks for ``trials`` in all)."""
    folder = tmp_path / "runs" / "sweep"
    folder.mkdir(parents=True)
    spec = SweepSpec.model_validate({"space": {"optim.learning_rate": LEARNING_RATES}, "pruner": "none"})
    record = {
        "study": STUDY,
        "storage": STUDY_FILE_NAME,
        "external_storage": False,
        "spec": spec.as_table(),
        "steps": None,
        "trials": trials,
        "parallel": 1,
        "seed": TINY["run"]["seed"],
        "config": SWEEP_CONFIG_NAME,
    }
    (folder / SWEEP_RECORD_NAME).write_text(json.dumps(record))
    (folder / SWEEP_CONFIG_NAME).write_text(json.dumps(TINY))
    study = optuna.create_study(storage=storage_url(folder), study_name=STUDY, direction="maximize")
    space = {"optim.learning_rate": optuna.distributions.CategoricalDistribution(LEARNING_RATES)}
    for number in range(finished):
        params = {"optim.learning_rate": LEARNING_RATES[number % 2]}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=space, value=float(number)))
    return folder


def storage_url(folder: Path) -> str:
    return f"sqlite:///{folder / STUDY_FILE_NAME}"


def trials_of(folder: Path) -> list:
    return optuna.load_study(study_name=STUDY, storage=storage_url(folder)).get_trials()


def one_line_error(result) -> str:
    """The refusal's line, once checked to be the only one and not a traceback."""
    assert result.exit_code not in (0, None), result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("amago: error: "), result.stderr
    assert "unexpected" not in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("planted", "words"), [("symlink", "trial_0 is a symlink"), ("file", "trial_0 is a file")]
)
def test_resume_refuses_a_trial_folder_that_is_a_link_or_a_file(finished_run, tmp_path, planted, words):
    victim = tmp_path / "someone-elses-run"
    shutil.copytree(finished_run, victim, symlinks=True)
    before = snapshot(victim)
    folder = make_sweep(tmp_path, trials=1)
    if planted == "symlink":
        (folder / "trial_0").symlink_to(
            victim
        )  # today: trial 0 resumes the victim and prunes its checkpoints
    else:
        (folder / "trial_0").write_text("")
    assert words in one_line_error(amago("sweep", "--resume", str(folder)))
    assert snapshot(victim) == before
    assert trials_of(folder) == []  # refused before the study was asked for a trial


@pytest.mark.slow
def test_a_run_dir_planted_in_the_study_is_ignored(finished_run, tmp_path):
    victim = tmp_path / "someone-elses-run"
    shutil.copytree(finished_run, victim, symlinks=True)
    before = snapshot(victim)
    folder = make_sweep(tmp_path, trials=1)
    study = optuna.load_study(study_name=STUDY, storage=storage_url(folder))
    study.enqueue_trial({"optim.learning_rate": 1e-4}, user_attrs={"run_dir": str(victim)})
    result = amago("sweep", "--resume", str(folder))
    assert result.exit_code == 0, result.stderr
    assert snapshot(victim) == before
    (trial,) = trials_of(folder)
    assert trial.state == optuna.trial.TrialState.COMPLETE
    assert (folder / "trial_0" / "config.resolved.json").is_file(), "trial 0 ran in the sweep's own trial_0"


def test_resume_never_appends_a_trial_log_through_a_link(tmp_path):
    theirs = tmp_path / "their-notes.txt"
    theirs.write_text("theirs\n")
    folder = make_sweep(tmp_path, trials=1)
    (folder / "logs").mkdir()
    (folder / "logs" / "trial_0.log").symlink_to(theirs)
    line = one_line_error(amago("sweep", "--resume", str(folder)))
    assert "trial_0.log is a symlink" in line
    assert theirs.read_text() == "theirs\n"
    (trial,) = trials_of(folder)
    assert trial.state == optuna.trial.TrialState.WAITING  # it runs once the log is a file of the folder


@pytest.mark.parametrize("planted", ["plots folder", "plot file"])
def test_show_never_writes_a_plot_through_a_link(tmp_path, planted):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "optimization_history.png").write_text("theirs\n")
    folder = make_sweep(tmp_path, trials=2, finished=2)
    if planted == "plots folder":
        (folder / "plots").symlink_to(outside)
    else:
        (folder / "plots").mkdir()
        (folder / "plots" / "optimization_history.png").symlink_to(outside / "optimization_history.png")
    assert "is a symlink" in one_line_error(amago("sweep", "show", str(folder)))
    assert os.listdir(outside) == ["optimization_history.png"]
    assert (outside / "optimization_history.png").read_text() == "theirs\n"


@pytest.mark.parametrize(
    ("link", "words"), [("symlink", "study.db is a symlink"), ("hard link", "is hard-linked")]
)
@pytest.mark.parametrize("command", ["show", "resume"])
def test_a_linked_study_database_is_refused_before_it_is_opened(tmp_path, link, words, command):
    elsewhere = make_sweep(tmp_path / "elsewhere", trials=2, finished=2)
    their_db = elsewhere / STUDY_FILE_NAME
    before = their_db.read_bytes()
    folder = make_sweep(tmp_path, trials=3)
    (folder / STUDY_FILE_NAME).unlink()
    if link == "symlink":
        (folder / STUDY_FILE_NAME).symlink_to(their_db)
    else:
        os.link(their_db, folder / STUDY_FILE_NAME)
    args = ["sweep", "show", str(folder)] if command == "show" else ["sweep", "--resume", str(folder)]
    assert words in one_line_error(amago(*args))
    assert their_db.read_bytes() == before


def test_a_second_driver_on_a_sweep_folder_is_one_line_naming_the_first(tmp_path):
    folder = make_sweep(tmp_path, trials=1, finished=1)
    held = acquire(folder, "sweep")  # the first driver, still running
    assert held is not None
    try:
        line = one_line_error(amago("sweep", "--resume", str(folder)))
    finally:
        held.release()
    assert f"is in use by another amago process (pid {os.getpid()} on host" in line
    assert "sweep" in line
    assert amago("sweep", "--resume", str(folder)).exit_code == 0  # once it ended, the sweep goes on
