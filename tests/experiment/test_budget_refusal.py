"""A budget that cannot fit a run worth starting is refused with the budget that would; sizing keeps whole
episodes of memory tasks, or says in one line that it cut them (issue 26)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.config.lengths import longest_sample
from amago_tools.sizing import calibrate
from amago_tools.sizing.budget import Costs, format_duration, format_steps

runner = CliRunner()


def _slow_machine(monkeypatch, *, per_step: float, per_update: float, startup: float) -> None:
    def time_probe(probe):
        window = longest_sample(probe)
        return Costs(
            seconds_per_pool_step=per_step * probe.rollout.parallel_actors,
            seconds_per_update=per_update * window,
            startup_seconds=startup,
            sequence_length=window,
        )

    monkeypatch.setattr(calibrate, "time_probe", time_probe)


def _run(*args: str) -> Any:
    return runner.invoke(app, ["run", *args, "--dry-run"])


def _config(result: Any) -> dict[str, Any]:
    return json.loads(result.stdout[result.stdout.index("{") :])


def test_a_budget_that_fits_nothing_is_refused_with_the_budget_that_fits(monkeypatch):
    # Issue 26: `--env metaworld-ml45 --traj-encoder mamba --budget 3m` on a 2-core CPU was sized to one step and
    # exited 0 with nothing trained. A slow machine's costs: the 1,501-step validation floor alone is minutes.
    _slow_machine(monkeypatch, per_step=0.01, per_update=0.02, startup=20.0)
    flags = ["--env", "metaworld-ml45", "--traj-encoder", "mamba"]
    result = _run(*flags, "--budget", "3m")
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()[1:]  # after the "measuring" note
    assert line.startswith("amago: error: --budget 3m cannot fit the smallest run worth starting")
    assert "sized by" not in result.stderr
    assert not result.stdout
    needed = re.search(r"give --budget (\S+) or more", line).group(1)
    result = _run(*flags, "--budget", needed)
    assert result.exit_code == 0, result.output
    sched = _config(result)["schedule"]
    assert sched["epochs"] >= 10
    assert sched["train_batches_per_epoch"] >= 1
    assert sched["val_timesteps_per_epoch"] >= 1501  # one whole meta-episode


def test_a_budget_shorter_than_the_start_is_refused_the_same_way(monkeypatch):
    _slow_machine(monkeypatch, per_step=0.001, per_update=0.001, startup=120.0)
    result = _run("--env", "tmaze-passive", "--budget", "1m")
    assert result.exit_code == 2
    assert "leaves no time to train: starting this run takes 120 s" in result.stderr
    assert re.search(r"give --budget \d+m or more", result.stderr)


def test_steps_keep_whole_episodes_of_a_memory_task_when_half_the_run_holds_one():
    # Issue 26: key-door --steps 20k cut the 500-step memory to 415.
    result = _run("--env", "key-door", "--steps", "20k")
    assert result.exit_code == 0, result.output
    assert _config(result)["run"]["max_seq_len"] == 500
    assert "warning" not in result.stderr


def test_steps_too_few_for_whole_episodes_say_so_and_name_the_steps_that_keep_them():
    result = _run("--env", "frozen-lake", "--steps", "5k")
    assert result.exit_code == 0, result.output
    assert _config(result)["run"]["max_seq_len"] < 250
    [warning] = [line for line in result.stderr.splitlines() if "warning" in line]
    assert "shorter than one 250-step episode" in warning
    assert "cannot remember" in warning
    fix = re.search(r"--steps (\S+) keeps whole episodes", warning).group(1)
    result = _run("--env", "frozen-lake", "--steps", fix)
    assert _config(result)["run"]["max_seq_len"] >= 250
    assert "warning" not in result.stderr


def test_a_budget_prefers_whole_episodes_of_a_memory_task(monkeypatch):
    # Issue 26: Meta-Frozen-Lake --budget 12m trained on 102-step sequences of ~250-step meta-episodes.
    # At these costs the most env steps that fit would save 190-step files; fewer steps keep whole episodes.
    _slow_machine(monkeypatch, per_step=0.0005, per_update=0.001, startup=3.0)
    result = _run("--env", "frozen-lake", "--budget", "12m")
    assert result.exit_code == 0, result.output
    assert _config(result)["run"]["max_seq_len"] >= 250
    assert "warning" not in result.stderr


def test_a_budget_too_short_for_whole_episodes_names_the_budget_that_keeps_them(monkeypatch):
    _slow_machine(monkeypatch, per_step=0.01, per_update=0.02, startup=5.0)
    result = _run("--env", "frozen-lake", "--budget", "12m")
    assert result.exit_code == 0, result.output
    [warning] = [line for line in result.stderr.splitlines() if "warning" in line]
    fix = re.search(r"--budget (\S+) keeps whole episodes", warning).group(1)
    result = _run("--env", "frozen-lake", "--budget", fix)
    assert result.exit_code == 0, result.output
    assert _config(result)["run"]["max_seq_len"] >= 250


@pytest.mark.parametrize(
    ("seconds", "text"), [(45, "45s"), (120.2, "3m"), (449, "8m"), (7201, "2.1h"), (162_000, "45h")]
)
def test_budgets_are_written_as_a_person_types_them(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("steps", "up", "text"),
    [
        (312_345, False, "310k"),
        (16_000, True, "16k"),
        (16_001, True, "17k"),
        (1_234_567, False, "1.2M"),
        (12, False, "12"),
    ],
)
def test_step_counts_are_written_as_a_person_types_them(steps, up, text):
    assert format_steps(steps, up=up) == text
