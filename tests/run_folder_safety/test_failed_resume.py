"""A failed resume changes nothing, and what a resume may change applies.

Everything that can fail (the config merge, the component build, the state load) happens before anything in
the run folder is written: an architecture that does not fit the saved state is one line naming the differing
settings, and the folder stays byte-identical, so a plain ``--resume`` still works afterwards. ``-o`` on
``--resume`` either applies (the documented list: schedule, logging, learning rate, ...) or is refused in one
line; what ``config.resolved.json`` records is what ran.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from malicious_folder import TINY, amago, snapshot

from amago import Experiment
from amago_core.config.sources import load_config
from amago_core.experiment.resume import ResumeMismatchError


@pytest.fixture
def run_dir(finished_run, tmp_path) -> Path:
    copy = tmp_path / "runs" / "victim"
    shutil.copytree(finished_run, copy)
    return copy


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("amago: error:")]


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _experiment(run_dir: Path, flags: dict | None = None, **settings) -> Experiment:
    """The run's own config, as a script would load it (the folder's place given again: a record has none)."""
    flags = {**(flags or {}), "run": {"name": run_dir.name, "ckpt_base_dir": str(run_dir.parent)}}
    config = load_config([run_dir / "config.resolved.json"], flags=flags, environ={})
    return Experiment(config, **settings)


def test_another_encoder_on_resume_is_one_line_and_the_run_is_untouched(run_dir):
    before = snapshot(run_dir)
    result = amago("run", "--resume", str(run_dir), "--traj-encoder", "rnn", "-o", "schedule.epochs=3")
    assert result.exit_code == 2, result.output
    (error,) = result.stderr.splitlines()
    assert "traj_encoder.kind: transformer → rnn" in error
    assert "untouched" in error
    assert snapshot(run_dir) == before

    again = amago("run", "--resume", str(run_dir), "-o", "schedule.epochs=3", "--quiet")
    assert again.exit_code == 0, again.output
    assert "resuming after epoch 1" in again.stderr
    epochs = [r["Epoch"] for r in _records(run_dir)]
    assert epochs == sorted(epochs)
    assert 2 in epochs  # the epoch after the saved ones ran
    evaluated = amago("eval", str(run_dir), "--episodes", "2")
    assert evaluated.exit_code == 0, evaluated.output


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("agent.gamma=0.5", "agent.gamma: 0.9999 → 0.5"),
        ("run.max_seq_len=3", "run.max_seq_len: 4 → 3"),
        ("traj_encoder.d_model=64", "traj_encoder.d_model: 32 → 64"),
        ("optim.mixed_precision=bf16", "optim.mixed_precision: no → bf16"),
    ],
)
def test_an_override_a_resume_cannot_apply_is_refused_in_one_line(run_dir, override, named):
    before = snapshot(run_dir)
    result = amago("run", "--resume", str(run_dir), "-o", override, "--quiet")
    assert result.exit_code == 2, result.output
    (error,) = _errors(result.stderr)
    assert named in error
    assert "untouched" in error
    assert snapshot(run_dir) == before


def test_a_learning_rate_changed_on_resume_applies_and_is_recorded(run_dir):
    result = amago(
        "run", "--resume", str(run_dir), "-o", "optim.learning_rate=0.01", "-o", "logging.log_interval=1",
        "-o", "schedule.epochs=3", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads((run_dir / "config.resolved.json").read_text())["optim"]["learning_rate"] == 0.01
    rates = [
        r["train/Learning Rate"] for r in _records(run_dir) if r["Epoch"] == 2 and "train/Learning Rate" in r
    ]
    warmup = TINY["optim"]["lr_warmup_steps"]
    assert rates
    for step, rate in enumerate(rates, start=8):  # 8 updates before the resume; warmup over 10 steps
        assert rate == pytest.approx(0.01 * min((step + 1) / warmup, 1.0))


def test_the_resumed_optimiser_takes_the_configs_rate_and_the_states_moments(run_dir):
    experiment = _experiment(run_dir, learning_rate=0.01, l2_coeff=0.05)
    experiment.start(resume=True)
    try:
        assert experiment.epoch == 2
        (group,) = experiment.optimizer.param_groups
        assert group["initial_lr"] == 0.01
        assert group["weight_decay"] == 0.05
        assert group["lr"] == pytest.approx(0.01 * 9 / 10)  # step 8 of a 10-step warmup
        assert experiment.lr_schedule.get_last_lr() == [group["lr"]]
        state = next(iter(experiment.optimizer.state_dict()["state"].values()))
        assert float(state["step"]) == 8  # the moments came from the saved state
    finally:
        experiment.close()


def test_a_state_that_does_not_fit_the_model_is_one_line_and_nothing_is_written(run_dir):
    before = snapshot(run_dir)
    experiment = _experiment(run_dir, flags={"traj_encoder": {"d_model": 64}})
    with pytest.raises(ResumeMismatchError) as failed:
        experiment.start(resume=True)
    message = str(failed.value)
    assert "\n" not in message
    assert "traj_encoder.d_model: 32 → 64" in message
    assert "the run folder is untouched" in message
    assert snapshot(run_dir) == before
