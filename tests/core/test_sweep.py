"""`amago sweep`: the space file, the driver (scores, failures, pruning, interrupts) and real sweeps end to end.

The driver tests replace each trial's `amago run` process with a small script that writes a metrics.jsonl
from the trial's values, so that what Optuna is told can be checked exactly; the end-to-end tests run real
trials.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

optuna = pytest.importorskip("optuna")

from amago_core.cli.app import app  # noqa: E402
from amago_core.io import UnsafePathError  # noqa: E402
from amago_studies import sweep as sweep_module  # noqa: E402
from amago_studies.sweep import (  # noqa: E402
    SweepDriver,
    SweepFolder,
    SweepSettings,
    distributions,
    objective_values,
    score,
    study_objects,
)
from amago_studies.sweep_spec import Param, SweepSpec  # noqa: E402

runner = CliRunner()
METRIC = "val/Average Total Return (Across All Env Names)"

# Real trials of a few seconds: two epochs, an evaluation after each, no plots.
TINY = [
    *(
        "-o",
        "schedule.epochs=2",
        "-o",
        "schedule.train_timesteps_per_epoch=8",
        "-o",
        "schedule.val_interval=1",
    ),
    *("-o", "schedule.train_batches_per_epoch=2", "-o", "schedule.val_timesteps_per_epoch=12"),
    *("-o", "rollout.parallel_actors=2", "-o", "run.max_seq_len=11", "-o", "logging.plot=false"),
]


def write_space(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body))
    return path


# -- the space file ------------------------------------------------------------------------------------------


def test_space_file_becomes_optuna_distributions(tmp_path):
    spec = SweepSpec.model_validate(
        {
            "space": {
                "optim.learning_rate": {"log_uniform": [1e-5, 1e-3]},
                "traj_encoder.kind": ["gru", "transformer"],
                "agent.tau": {"uniform": [0.001, 0.01], "step": 0.001},
                "traj_encoder.n_layers": {"int": [1, 4]},
                "optim.batch_size": {"log_int": [8, 64]},
            }
        }
    )
    found = distributions(spec)
    assert found["optim.learning_rate"] == optuna.distributions.FloatDistribution(1e-5, 1e-3, log=True)
    assert found["traj_encoder.kind"] == optuna.distributions.CategoricalDistribution(["gru", "transformer"])
    assert found["agent.tau"] == optuna.distributions.FloatDistribution(0.001, 0.01, step=0.001)
    assert found["traj_encoder.n_layers"] == optuna.distributions.IntDistribution(1, 4)
    assert found["optim.batch_size"] == optuna.distributions.IntDistribution(8, 64, log=True)
    # What the folder records reads back as the same spec.
    assert SweepSpec.model_validate(spec.as_table()) == spec


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("optim.learning_rate", {"log_uniform": [0, 1e-3]}, "low > 0"),
        ("optim.learning_rate", {"uniform": [1e-3, 1e-4]}, "low < high"),
        ("optim.learning_rate", {"uniform": [1e-4, 1e-3], "log_uniform": [1e-4, 1e-3]}, "exactly one range"),
        ("optim.learning_rate", {"normal": [0, 1]}, "exactly one range"),
        ("optim.learning_rate", {"uniform": [1e-4]}, "two numbers"),
        ("traj_encoder.n_layers", {"int": [1.5, 4]}, "whole numbers"),
        ("traj_encoder.kind", ["gru"], "at least two"),
        ("traj_encoder.kind", ["gru", "gru"], "listed twice"),
        ("traj_encoder.kind", [["gru"], "rnn"], "strings, numbers"),
        ("optim learning_rate", [1, 2], "dotted config key"),
        ("optim.learning_rate", 3e-4, "neither a list"),
        ("optim.learning_rate", {"log_uniform": [1e-5, 1e-3], "step": 1e-5}, "no step"),
        # Ranges and values no config can hold: every trial would fail with an OverflowError.
        ("traj_encoder.n_layers", {"int": [1, 1e30]}, "overflows a 64-bit integer"),
        ("traj_encoder.n_layers", {"int": [1, 2**70]}, "fit a 64-bit integer"),
        ("agent.tau", {"uniform": [-1e308, 1e308]}, "too wide"),
        ("optim.learning_rate", [1e-4, float("inf")], "not finite"),
        ("traj_encoder.n_layers", [1, 2**64], "not finite or does not fit a 64-bit integer"),
        ("agent.tau", {"uniform": [0, 1], "step": float("nan")}, "finite number"),
        ("traj_encoder.n_layers", {"int": [1, 9], "step": 0.5}, "whole step"),
    ],
)
def test_a_bad_space_entry_is_one_line_naming_the_key(key, value, words):
    with pytest.raises((ValueError, ValidationError)) as caught:
        SweepSpec.model_validate({"space": {key: value}})
    text = str(caught.value)
    assert words in text
    assert repr(key) in text


def test_the_objective_must_be_a_logged_metric_key():
    with pytest.raises(ValidationError, match=r"must be a metrics\.jsonl key"):
        SweepSpec.model_validate({"space": {"optim.learning_rate": [1e-4, 3e-4]}, "objective": "return"})
    with pytest.raises(ValidationError, match="extra"):
        SweepSpec.model_validate({"space": {"optim.learning_rate": [1e-4, 3e-4]}, "objetive": "val/x"})


def test_probe_values_are_every_choice_or_both_ends():
    assert Param.parse("a.b", ["x", "y", "z"]).probe_values() == ["x", "y", "z"]
    assert Param.parse("a.b", {"int": [2, 8]}).probe_values() == [2, 8]
    assert Param.parse("a.b", {"log_uniform": [1e-5, 1e-3]}).probe_values() == [1e-5, 1e-3]


# -- reading scores --------------------------------------------------------------------------------------------


def test_objective_values_skip_other_records_and_a_line_cut_short(tmp_path):
    lines = [
        {"Epoch": 0, METRIC: -1.0},
        {"Epoch": 1, "train/Loss": 3.0},
        {"Epoch": 2, METRIC: 0.5},
        {"Epoch": 4, METRIC: float("nan")},
        {"Epoch": 4, METRIC: 1.0},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + '\n{"Epoch": 5, "val/Av'
    (tmp_path / "metrics.jsonl").write_text(text)
    values = objective_values(tmp_path, METRIC)
    assert values == [(0, -1.0), (2, 0.5), (4, 1.0)]
    assert score(values, last=2) == pytest.approx(0.75)
    assert score(values, last=10) == pytest.approx(1.0 / 6)
    assert score([], last=3) is None


# -- the driver, with scripted trials ---------------------------------------------------------------------------

FAKE_TRIAL = f"""
METRIC = {METRIC!r}
import json, os, signal, sys, time
from pathlib import Path

args = sys.argv[1:]
if args[0] == "--resume":
    run_dir = Path(args[1]); config = json.loads((run_dir / "config.resolved.json").read_text())
    start = sum(1 for _ in (run_dir / "metrics.jsonl").open())
    (run_dir / "resumed").write_text("yes")
else:
    config = json.loads(Path(args[0]).read_text()); run_dir = Path(args[1])
    run_dir.mkdir(parents=True)
    (run_dir / "config.resolved.json").write_text(json.dumps(config))
    start = 0
lr = config["optim"]["learning_rate"]
if lr == 2e-3:
    print("RuntimeError: the scripted trial crashed", flush=True)
    sys.exit(3)
value = {{1e-3: 1.0, 5e-4: 0.5, 1e-4: 0.1}}[lr]
epochs = int(os.environ.get("FAKE_EPOCHS", "4"))
with (run_dir / "metrics.jsonl").open("a") as out:
    for epoch in range(start, epochs):
        # Epoch 0's evaluation comes before the first update, as in `amago run`.
        record = {{"Epoch": epoch, "gradient_steps": 4 * epoch, METRIC: value + 0.01 * epoch}}
        out.write(json.dumps(record) + "\\n"); out.flush()
        time.sleep(float(os.environ.get("FAKE_SLEEP", "0.2")))
"""


@pytest.fixture
def scripted(tmp_path, monkeypatch):
    """Trials run FAKE_TRIAL instead of `amago run`: the value of each epoch follows the learning rate."""
    script = tmp_path / "fake_trial.py"
    script.write_text(FAKE_TRIAL)

    def command(*, config=None, name=None, base_dir=None, resume=None, **_):
        if resume is not None:
            return [sys.executable, str(script), "--resume", str(resume)]
        return [sys.executable, str(script), str(config), str(Path(base_dir) / name)]

    monkeypatch.setattr(sweep_module, "child_run_command", command)
    return script


def make_driver(tmp_path, space, *, trials, parallel=1, **spec_fields):
    folder = SweepFolder(tmp_path / "sweep")
    folder.root.mkdir()
    folder.config.write_text("{}\n")  # the main job's config
    spec = SweepSpec.model_validate({"space": space, **spec_fields})
    settings = SweepSettings(spec, study="s", steps=None, trials=trials, parallel=parallel)
    sampler, pruner = study_objects(spec)
    study = optuna.create_study(
        storage=f"sqlite:///{folder.database}",
        study_name="s",
        sampler=sampler,
        pruner=pruner,
        direction="maximize",
    )
    return SweepDriver(folder, settings, study, poll_seconds=0.05), study


def test_each_trial_is_scored_by_its_last_evaluations_and_a_crash_fails_only_itself(
    tmp_path, scripted, capsys
):
    space = {"optim.learning_rate": [1e-3, 2e-3, 1e-4]}
    driver, study = make_driver(tmp_path, space, trials=4, pruner="none", last=2)
    for lr in (2e-3, 1e-3, 1e-4):  # the crash first: the study goes on after it
        study.enqueue_trial({"optim.learning_rate": lr})
    assert driver.run() == 0
    trials = study.get_trials()
    assert len(trials) == 4  # the fourth drawn by the sampler
    crashed, good, poor = trials[:3]
    assert crashed.state == optuna.trial.TrialState.FAIL
    assert "exited 3" in crashed.user_attrs["error"]
    assert "the scripted trial crashed" in crashed.user_attrs["error"]
    assert good.state == poor.state == optuna.trial.TrialState.COMPLETE
    assert good.value == pytest.approx((1.02 + 1.03) / 2)  # the mean of the last two epochs' values
    assert poor.value == pytest.approx((0.12 + 0.13) / 2)
    assert good.intermediate_values == pytest.approx({0: 1.0, 1: 1.01, 2: 1.02, 3: 1.03})
    err = capsys.readouterr().err
    assert "failed: its run exited 3: RuntimeError: the scripted trial crashed" in err
    # Each trial has its own resolved config record, with the value Optuna drew.
    for trial in trials:
        record = json.loads((driver.folder.trial_config(trial.number)).read_text())
        assert record["optim"]["learning_rate"] == trial.params["optim.learning_rate"]
        assert record["run"]["torch_threads"] == 1


def test_the_median_pruner_stops_a_trial_below_the_others(tmp_path, scripted, monkeypatch):
    monkeypatch.setenv("FAKE_EPOCHS", "8")
    space = {"optim.learning_rate": [1e-3, 1e-4]}
    driver, study = make_driver(tmp_path, space, trials=4, pruner="median", startup_trials=1, prune_after=1)
    # First a good trial, then a poor one: it is pruned on its intermediate values.
    study.enqueue_trial({"optim.learning_rate": 1e-3})
    study.enqueue_trial({"optim.learning_rate": 1e-4})
    study.enqueue_trial({"optim.learning_rate": 1e-3})
    study.enqueue_trial({"optim.learning_rate": 1e-4})
    assert driver.run() == 0
    states = {t.number: t.state for t in study.get_trials()}
    assert states[0] == optuna.trial.TrialState.COMPLETE
    assert states[1] == optuna.trial.TrialState.PRUNED
    assert states[3] == optuna.trial.TrialState.PRUNED
    pruned = study.get_trials()[1]
    written = objective_values(Path(pruned.user_attrs["run_dir"]), METRIC)
    assert 2 <= len(written) < 8, "the pruned trial's process was stopped before its end"


def test_failing_trials_in_a_row_stop_the_driver_in_one_line(tmp_path, scripted, capsys):
    driver, study = make_driver(tmp_path, {"optim.learning_rate": [2e-3, 2.5e-3]}, trials=10)
    study.enqueue_trial({"optim.learning_rate": 2e-3})
    assert driver.run() == 1
    assert len(study.get_trials()) == 3  # it stopped after three failures, not ten
    assert "3 trials in a row failed and none finished" in capsys.readouterr().err


def test_an_invalid_combination_fails_that_trial_and_the_study_goes_on(tmp_path, scripted, capsys):
    space = {"traj_encoder.n_heads": [3, 4], "traj_encoder.d_model": [96, 128]}
    driver, study = make_driver(tmp_path, space, trials=2, pruner="none")
    # d_model must be a multiple of n_heads: 128 with 3 heads is no config; 128 with 4 heads is.
    study.enqueue_trial({"traj_encoder.n_heads": 3, "traj_encoder.d_model": 128})
    study.enqueue_trial({"traj_encoder.n_heads": 4, "traj_encoder.d_model": 128})
    assert driver.run() == 0
    invalid, valid = study.get_trials()
    assert invalid.state == optuna.trial.TrialState.FAIL
    assert "its config is invalid" in invalid.user_attrs["error"]
    assert "n_heads" in invalid.user_attrs["error"]
    assert valid.state == optuna.trial.TrialState.COMPLETE
    assert not driver.folder.run_dir(invalid.number).exists()


def test_an_interrupted_trial_waits_in_the_study_and_resumes_from_its_folder(tmp_path, scripted, monkeypatch):
    monkeypatch.setenv("FAKE_SLEEP", "0.5")
    driver, study = make_driver(tmp_path, {"optim.learning_rate": [1e-3, 1e-4]}, trials=1, pruner="none")
    real_follow = driver._follow

    def follow_then_stop(number):
        real_follow(number)
        if objective_values(driver.running[number].run_dir, METRIC):
            raise KeyboardInterrupt  # what Ctrl-C does to the loop

    driver._follow = follow_then_stop
    assert driver.run() == 130
    (trial,) = study.get_trials()
    assert trial.state == optuna.trial.TrialState.WAITING
    run_dir = Path(trial.user_attrs["run_dir"])
    again, _ = SweepDriver(driver.folder, driver.settings, study, poll_seconds=0.05), None
    monkeypatch.setenv("FAKE_SLEEP", "0.05")
    assert again.run() == 0
    (trial,) = study.get_trials()
    assert trial.state == optuna.trial.TrialState.COMPLETE
    assert (run_dir / "resumed").is_file(), "the second driver continued the same run folder"
    assert sorted(trial.intermediate_values) == [0, 1, 2, 3]


def test_the_score_skips_evaluations_before_the_first_update_and_the_line_labels_it(
    tmp_path, scripted, capsys
):
    driver, study = make_driver(
        tmp_path, {"optim.learning_rate": [1e-3, 1e-4]}, trials=1, pruner="none", last=10
    )
    study.enqueue_trial({"optim.learning_rate": 1e-3})
    assert driver.run() == 0
    (trial,) = study.get_trials()
    # Epochs 1-3 (1.01, 1.02, 1.03); epoch 0's 1.0 was the untrained policy's.
    assert trial.value == pytest.approx(1.02)
    assert (
        "amago: trial 0 finished: score 1.02 (val return, mean of the last 3 evaluations; 1 before its first "
        "gradient update left out; best so far: trial 0, score 1.02)\n"
    ) in capsys.readouterr().err


def test_a_score_of_untrained_evaluations_only_says_so(tmp_path, scripted, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_EPOCHS", "1")  # one evaluation, before any update
    driver, study = make_driver(tmp_path, {"optim.learning_rate": [1e-3, 1e-4]}, trials=1, pruner="none")
    study.enqueue_trial({"optim.learning_rate": 1e-4})
    assert driver.run() == 0
    err = capsys.readouterr().err
    assert (
        "amago: trial 0 finished: score 0.1 (val return, its last evaluation, made before its first gradient "
        "update; best so far: trial 0, score 0.1)\n"
    ) in err
    assert "only logged before its first gradient update, so its score says little" in err


def test_a_sweep_whose_every_trial_failed_exits_1_saying_so(tmp_path, scripted, capsys):
    driver, study = make_driver(tmp_path, {"optim.learning_rate": [2e-3, 1e-4]}, trials=2)
    study.enqueue_trial({"optim.learning_rate": 2e-3})
    study.enqueue_trial({"optim.learning_rate": 2e-3})
    assert driver.run() == 1
    assert [t.state for t in study.get_trials()] == [optuna.trial.TrialState.FAIL] * 2
    assert "amago: every trial this sweep ran failed (2 of 2;" in capsys.readouterr().err


def test_a_run_dir_planted_in_the_study_is_never_where_a_trial_runs(tmp_path, scripted):
    someone_elses = tmp_path / "someone-elses-run"
    someone_elses.mkdir()
    (someone_elses / "config.resolved.json").write_text(json.dumps({"optim": {"learning_rate": 1e-3}}))
    (someone_elses / "metrics.jsonl").write_text("")
    before = sorted(p.name for p in someone_elses.iterdir())
    driver, study = make_driver(tmp_path, {"optim.learning_rate": [1e-3, 1e-4]}, trials=1, pruner="none")
    study.enqueue_trial({"optim.learning_rate": 1e-3}, user_attrs={"run_dir": str(someone_elses)})
    assert driver.run() == 0
    assert sorted(p.name for p in someone_elses.iterdir()) == before  # not resumed there
    assert (someone_elses / "metrics.jsonl").read_text() == ""
    (trial,) = study.get_trials()
    assert trial.state == optuna.trial.TrialState.COMPLETE
    assert objective_values(driver.folder.run_dir(0), METRIC), "the trial ran in the sweep's trial_0"


@pytest.mark.parametrize(
    "planted", ["trial folder link", "trial folder file", "log link", "log hard link", "configs link"]
)
def test_a_planted_link_stops_the_driver_in_one_line_and_changes_nothing_outside(tmp_path, scripted, planted):
    outside = tmp_path / "outside"
    outside.mkdir()
    theirs = outside / "notes.txt"
    theirs.write_text("theirs\n")
    driver, study = make_driver(tmp_path, {"optim.learning_rate": [1e-3, 1e-4]}, trials=1, pruner="none")
    root = driver.folder.root
    if planted == "trial folder link":
        (root / "trial_0").symlink_to(outside)
    elif planted == "trial folder file":
        (root / "trial_0").write_text("")
    elif planted == "log link":
        (root / "logs").mkdir()
        (root / "logs" / "trial_0.log").symlink_to(theirs)
    elif planted == "log hard link":
        (root / "logs").mkdir()
        os.link(theirs, root / "logs" / "trial_0.log")
    else:
        (root / "configs").symlink_to(outside)
    with pytest.raises(UnsafePathError) as caught:
        driver.run()
    assert "\n" not in str(caught.value)
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt"]
    assert theirs.read_text() == "theirs\n"
    (trial,) = study.get_trials()
    assert trial.state == optuna.trial.TrialState.WAITING  # a --resume continues it once the folder is fixed


# -- the command line --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "needs --space FILE"),
        (["--space", "MISSING.toml"], "does not exist"),
        (["--trials", "0", "--space", "x.toml"], "--trials must be at least 1"),
    ],
)
def test_bad_sweep_options_are_one_line(tmp_path, args, words):
    result = runner.invoke(app, ["sweep", *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert words in result.stderr


@pytest.mark.parametrize(
    ("space", "words"),
    [
        ('"optim.learning_rat" = [1e-4, 3e-4]', "'optim.learning_rat'"),
        ('"traj_encoder.kind" = ["gru", "no-such-encoder"]', "'traj_encoder.kind' = 'no-such-encoder'"),
        ('"optim.learning_rate" = {uniform = [-1.0, 1e-3]}', "'optim.learning_rate' = -1.0"),
        ('"run.ckpt_base_dir" = ["a", "b"]', "not searchable"),
    ],
)
def test_a_space_that_makes_no_valid_config_is_refused_before_anything_runs(tmp_path, space, words):
    file = write_space(tmp_path / "space.toml", f"[space]\n{space}\n")
    result = runner.invoke(
        app, ["sweep", "--space", str(file), "-o", f"run.ckpt_base_dir={tmp_path}", "--name", "s"]
    )
    assert result.exit_code == 2, result.output
    assert words in result.stderr
    assert not (tmp_path / "s").exists()


def test_a_range_that_overflows_is_refused_at_dry_run_in_one_line(tmp_path):
    file = write_space(tmp_path / "space.toml", '[space]\n"traj_encoder.n_layers" = {int = [1, 1e30]}\n')
    args = ["sweep", "--space", str(file), "-o", f"run.ckpt_base_dir={tmp_path}", "--name", "s", "--dry-run"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert "'traj_encoder.n_layers': int [1, 1e+30] overflows a 64-bit integer" in result.stderr


@pytest.mark.parametrize("name", ["../../escape", "/tmp/amago-absolute-sweep", "a/b"])
def test_a_sweep_name_that_is_a_path_is_one_line(tmp_path, name):
    file = write_space(tmp_path / "space.toml", '[space]\n"optim.learning_rate" = [1e-4, 3e-4]\n')
    args = ["sweep", "--space", str(file), "-o", f"run.ckpt_base_dir={tmp_path}", "--name", name, "--dry-run"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"sweep name {name!r} must be a plain folder name" in result.stderr


def test_resume_refuses_a_new_space_and_a_folder_that_is_no_sweep(tmp_path):
    result = runner.invoke(app, ["sweep", "--resume", str(tmp_path), "--space", "x.toml"])
    assert result.exit_code == 2
    assert "drop --space" in result.stderr
    result = runner.invoke(app, ["sweep", "--resume", str(tmp_path)])
    assert result.exit_code == 2
    assert "is not a sweep folder" in result.stderr


@pytest.mark.slow
def test_a_real_sweep_then_show_then_resume_with_more_trials(tmp_path):
    space = write_space(
        tmp_path / "space.toml",
        """
        last = 2
        startup_trials = 2
        [space]
        "optim.learning_rate" = {log_uniform = [1e-4, 1e-3]}
        "traj_encoder.kind" = ["gru", "transformer"]
        """,
    )
    base = ["sweep", "--space", str(space), "-o", f"run.ckpt_base_dir={tmp_path}", "--name", "s", *TINY]
    command = [sys.executable, "-m", "amago_core.cli.app"]
    done = subprocess.run(
        [*command, *base, "--trials", "2", "--parallel", "2"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["trials"] == {"complete": 2}
    folder = tmp_path / "s"
    for row in summary["best"]:
        run_dir = Path(row["run_dir"])
        assert run_dir.parent == folder
        resolved = json.loads((run_dir / "config.resolved.json").read_text())
        # The value Optuna drew is what the trial ran with.
        assert resolved["optim"]["learning_rate"] == pytest.approx(row["params"]["optim.learning_rate"])
        kind = {"gru": "rnn"}.get(row["params"]["traj_encoder.kind"], row["params"]["traj_encoder.kind"])
        assert resolved["traj_encoder"]["kind"] == kind
        assert len(objective_values(run_dir, METRIC)) >= 2
    shown = subprocess.run([*command, "sweep", "show", str(folder), "--json"], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert [row["number"] for row in report["best"]] == [row["number"] for row in summary["best"]]
    assert {Path(p).name for p in report["plots"]} >= {"optimization_history.png", "parallel_coordinate.png"}
    more = subprocess.run(
        [*command, "sweep", "--resume", str(folder), "--trials", "3"], capture_output=True, text=True
    )
    assert more.returncode == 0, more.stderr
    assert json.loads(more.stdout)["trials"] == {"complete": 3}
    assert json.loads((folder / "sweep.json").read_text())["trials"] == 3


@pytest.mark.slow
def test_sigterm_to_the_driver_stops_its_trial_the_clean_way_and_resume_finishes_it(tmp_path):
    space = write_space(tmp_path / "space.toml", '[space]\n"optim.learning_rate" = [1e-4, 3e-4]\n')
    long = [a.replace("schedule.epochs=2", "schedule.epochs=40") for a in TINY]
    base = ["sweep", "--space", str(space), "-o", f"run.ckpt_base_dir={tmp_path}", "--name", "s", *long]
    command = [sys.executable, "-m", "amago_core.cli.app"]
    driver = subprocess.Popen([*command, *base, "--trials", "1"], stderr=subprocess.PIPE, text=True)
    metrics = tmp_path / "s" / "trial_0" / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (metrics.is_file() and "train/" in metrics.read_text()):
        time.sleep(0.5)
    driver.send_signal(signal.SIGTERM)
    _, err = driver.communicate(timeout=120)
    assert driver.returncode == 130, err
    assert "--resume" in err
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 's' / 'study.db'}")
    assert [t.state for t in study.get_trials()] == [optuna.trial.TrialState.WAITING]
    assert (tmp_path / "s" / "trial_0" / "config.resolved.json").is_file()
    short = [*command, "sweep", "--resume", str(tmp_path / "s")]
    done = subprocess.run(short, capture_output=True, text=True, env={**os.environ}, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "trial 0 resumes" in done.stderr
    assert "resuming after epoch" in (tmp_path / "s" / "logs" / "trial_0.log").read_text()


def test_enqueued_trials_run_first_and_must_lie_in_the_space(tmp_path, scripted):
    space = {"optim.learning_rate": [1e-3, 5e-4, 1e-4], "traj_encoder.n_layers": {"int": [1, 3]}}
    spec = SweepSpec.model_validate({"space": space, "enqueue": [{"optim.learning_rate": 1e-4}]})
    assert spec.enqueue == ({"optim.learning_rate": 1e-4},)
    for bad, words in (
        ({"optim.learning_rate": 2e-4}, "outside its space"),
        ({"traj_encoder.n_layers": 4}, "outside its space"),
        ({"traj_encoder.n_layers": 1.5}, "outside its space"),
        ({"optim.batch_size": 8}, "not a key of [space]"),
    ):
        with pytest.raises(ValidationError) as caught:
            SweepSpec.model_validate({"space": space, "enqueue": [bad]})
        assert words in str(caught.value)


@pytest.mark.slow
def test_the_command_enqueues_the_files_trials_first(tmp_path):
    file = write_space(
        tmp_path / "space.toml",
        """
        [space]
        "optim.learning_rate" = [1e-4, 3e-4]
        [[enqueue]]
        "optim.learning_rate" = 3e-4
        """,
    )
    args = ["sweep", "--space", str(file), "-o", f"run.ckpt_base_dir={tmp_path}", "--name", "s", *TINY]
    result = runner.invoke(app, [*args, "--trials", "1"])
    assert result.exit_code == 0, result.stderr
    (trial,) = optuna.load_study(
        study_name="s", storage=f"sqlite:///{tmp_path / 's' / 'study.db'}"
    ).get_trials()
    assert trial.params == {"optim.learning_rate": 3e-4}


def test_missing_optuna_names_the_install_command(tmp_path, monkeypatch):
    file = write_space(tmp_path / "space.toml", '[space]\n"optim.learning_rate" = [1e-4, 3e-4]\n')
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if it were not installed
    args = ["sweep", "--space", str(file), "-o", f"run.ckpt_base_dir={tmp_path}", "--name", "s"]
    result = runner.invoke(app, args)
    assert result.exit_code != 0
    assert (
        result.stderr.strip() == "amago: error: amago sweep needs optuna: pip install 'amago-studies[sweep]'"
    )
    assert not (tmp_path / "s").exists()  # said before anything was written


def test_resume_takes_only_connection_overrides_and_says_it_is_a_sweep(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    spec = SweepSpec.model_validate({"space": {"optim.learning_rate": [1e-4, 3e-4]}})
    (folder / "sweep.json").write_text(json.dumps({"study": "s", "spec": spec.as_table(), "trials": 2}))
    result = runner.invoke(app, ["sweep", "--resume", str(folder), "-o", "optim.learning_rate=1e-3"])
    assert result.exit_code == 2
    assert f"{folder} is a sweep: it resumes with the config it started with" in result.stderr
    assert "refused: optim.learning_rate=1e-3" in result.stderr
