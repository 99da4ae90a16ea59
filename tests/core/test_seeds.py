"""`amago run --seeds`: parsing, the group folder, the driver (failures, resume) and a real two-seed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_studies import seeds as seeds_module
from amago_studies.seeds import (
    SeedGroup,
    connect_overrides,
    parse_seeds,
    resume_group,
    run_seeds,
    seed_command,
)

runner = CliRunner()

# A run of a few seconds: one epoch of a handful of steps, no plots.
TINY = [
    *("-o", "schedule.epochs=1", "-o", "schedule.train_timesteps_per_epoch=8"),
    *("-o", "schedule.train_batches_per_epoch=4", "-o", "schedule.val_timesteps_per_epoch=16"),
    *("-o", "rollout.parallel_actors=2", "-o", "run.max_seq_len=11", "-o", "logging.plot=false"),
]


def test_seeds_count_starts_at_the_base_and_a_list_is_itself():
    assert parse_seeds("3") == [0, 1, 2]
    assert parse_seeds("2", base=10) == [10, 11]
    assert parse_seeds("1,4,9") == [1, 4, 9]
    assert parse_seeds(" 7 , 0") == [7, 0]


@pytest.mark.parametrize("text", ["", "x", "0", "-2", "1,,2", "1,-1", "2.5", "1,1", "100000"])
def test_bad_seeds_are_one_line(text):
    with pytest.raises(ValueError, match="--seeds") as caught:
        parse_seeds(text)
    assert "\n" not in str(caught.value)
    assert "--seeds" in str(caught.value)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--seeds", "abc"], "comma-separated"),
        (["--seeds", "1,2", "--seed", "3"], "drop --seed"),
        (["--seeds", "2", "--smoke"], "drop --smoke"),
        (["--parallel", "2"], "add --seeds"),
        (["--seeds", "2", "--parallel", "0"], "at least 1"),
    ],
)
def test_bad_seed_options_are_one_line(args, words):
    result = runner.invoke(app, ["run", *args])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert words in result.stderr


def test_dry_run_prints_the_seed_folders_and_the_shared_config(tmp_path):
    args = ["run", "--seeds", "1,4", "--name", "grp", "-o", f"run.ckpt_base_dir={tmp_path}", "--dry-run"]
    result = runner.invoke(app, [*args, "-o", "logging.log_to_wandb=true"])
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["group"] == str(tmp_path / "grp")
    assert plan["seeds"] == {"1": str(tmp_path / "grp" / "seed_1"), "4": str(tmp_path / "grp" / "seed_4")}
    run = plan["config"]["run"]
    assert (run["name"], run["seed"], run["ckpt_base_dir"], run["torch_threads"]) == (
        None,
        None,
        plan["group"],
        1,
    )
    assert plan["config"]["logging"]["wandb_group_name"] == "grp"
    assert not (tmp_path / "grp").exists()

    kept = runner.invoke(app, [*args, "-o", "run.torch_threads=2", "-o", "logging.wandb_group_name=mine"])
    assert kept.exit_code == 0, kept.stderr
    config = json.loads(kept.stdout)["config"]
    assert config["run"]["torch_threads"] == 2
    assert config["logging"]["wandb_group_name"] == "mine"


def test_a_failing_seed_does_not_stop_the_others(tmp_path, capsys):
    fail = [sys.executable, "-c", "import sys; print('first'); print('boom: bad thing'); sys.exit(3)"]
    ok = [sys.executable, "-c", "print('fine')"]
    ended: list[tuple[int, int]] = []
    codes = run_seeds(
        {0: fail, 1: ok, 2: ok},
        {k: tmp_path / "logs" / f"seed_{k}.log" for k in range(3)},
        parallel=2,
        on_exit=lambda seed, code: ended.append((seed, code)),
        poll_seconds=0.01,
    )
    assert codes == {0: 3, 1: 0, 2: 0}
    assert sorted(ended) == [(0, 3), (1, 0), (2, 0)]
    assert "amago: seed 0 failed (exit 3): boom: bad thing\n" in capsys.readouterr().err
    assert (tmp_path / "logs" / "seed_1.log").read_text().strip() == "fine"


def test_resume_continues_checkpointed_seeds_and_starts_missing_ones(tmp_path, monkeypatch):
    group = SeedGroup(tmp_path / "grp")
    group.root.mkdir()
    group.write_record({"seeds": [0, 1, 2], "command": [], "parallel": 2, "exit_codes": {"0": 0, "1": 1}})
    (group.run_dir(1)).mkdir()
    (group.run_dir(1) / "config.resolved.json").write_text("{}")
    seen = {}

    def fake_run_seeds(commands, logs, parallel, on_exit, **_):  # records what would run
        seen.update(commands=commands, parallel=parallel)
        for seed in commands:
            on_exit(seed, 0)
        return dict.fromkeys(commands, 0)

    monkeypatch.setattr(seeds_module, "run_seeds", fake_run_seeds)
    assert resume_group(group, parallel=None, overrides=["logging.log_to_wandb=true"]) == 0
    assert sorted(seen["commands"]) == [1, 2]  # seed 0 finished
    assert all("logging.log_to_wandb=true" in command for command in seen["commands"].values())
    assert seen["commands"][1][-2:] == ["--resume", str(group.run_dir(1))]
    assert "--seed" in seen["commands"][2]
    assert "--resume" not in seen["commands"][2]
    assert seen["parallel"] == 2
    assert group.read_record()["exit_codes"] == {"0": 0, "1": 0, "2": 0}


def test_resuming_a_group_refuses_other_settings(tmp_path):
    group = SeedGroup(tmp_path / "grp")
    group.root.mkdir()
    group.write_record({"seeds": [0], "command": [], "parallel": 1, "exit_codes": {}})
    result = runner.invoke(app, ["run", "--resume", str(group.root), "--seed", "3"])
    assert result.exit_code == 2
    assert "drop --seed" in result.stderr
    assert result.stderr.count("\n") == 1
    result = runner.invoke(app, ["run", "--resume", str(group.root), "-o", "schedule.epochs=3"])
    assert result.exit_code == 2
    assert "refused: schedule.epochs=3" in result.stderr
    assert result.stderr.count("\n") == 1


def test_folder_owned_settings_come_from_the_command_not_the_group_file(tmp_path):
    config = {
        "run": {"name": None, "ckpt_base_dir": "x"},
        "logging": {"log_to_wandb": True, "wandb_project": "p"},
    }
    assert connect_overrides(config) == ["logging.log_to_wandb=true", 'logging.wandb_project="p"']


def _amago(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amago_core.cli.app", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "AMAGO_NO_PREFLIGHT": "1"},
        timeout=300,
    )


def test_two_real_seeds_in_parallel_then_resume_a_missing_one(tmp_path):
    result = _amago(
        "run",
        *TINY,
        "--seeds",
        "2",
        "--parallel",
        "2",
        "--name",
        "grp",
        "-o",
        f"run.ckpt_base_dir={tmp_path}",
    )
    assert result.returncode == 0, result.stderr
    group = SeedGroup(tmp_path / "grp")
    summary = json.loads(result.stdout)
    kept = json.loads(group.summary.read_text())  # kept in the group for scripts and compare (exact floats)
    assert [(r["seed"], r["exit_code"]) for r in kept["seeds"]] == [
        (r["seed"], r["exit_code"]) for r in summary["seeds"]
    ]
    assert kept["mean_final_return"] == pytest.approx(summary["mean_final_return"], abs=1e-6)
    assert [row["seed"] for row in summary["seeds"]] == [0, 1]
    assert all(row["exit_code"] == 0 and row["final_return"] is not None for row in summary["seeds"])
    assert summary["mean_final_return"] == pytest.approx(sum(r["final_return"] for r in summary["seeds"]) / 2)
    for seed in (0, 1):
        record = json.loads((group.run_dir(seed) / "config.resolved.json").read_text())
        assert (record["run"]["seed"], record["run"]["name"], record["run"]["torch_threads"]) == (
            seed,
            f"seed_{seed}",
            1,
        )
        assert group.log(seed).is_file()

    again = _amago("run", *TINY, "--seeds", "2", "--name", "grp", "-o", f"run.ckpt_base_dir={tmp_path}")
    assert again.returncode == 2
    assert "--resume" in again.stderr

    # Seed 1 never ran: no folder, no exit code. Resuming the group starts it and leaves seed 0 alone.
    record = group.read_record()
    del record["exit_codes"]["1"]
    group.write_record(record)
    for path in sorted(group.run_dir(1).rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    group.run_dir(1).rmdir()
    seed_0_metrics = (group.run_dir(0) / "metrics.jsonl").read_text()
    resumed = _amago("run", "--resume", str(group.root))
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming seeds 1 of" in resumed.stderr
    assert (group.run_dir(1) / "metrics.jsonl").is_file()
    assert (group.run_dir(0) / "metrics.jsonl").read_text() == seed_0_metrics
    assert json.loads(resumed.stdout)["failed"] == []


def test_sigterm_to_the_driver_stops_its_seeds_the_clean_way(tmp_path):
    # A seed that writes a line when SIGTERM reaches it: the driver passes the scheduler's SIGTERM on and waits.
    seed_code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('got SIGTERM', flush=True), sys.exit(0)))\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    driver_code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from amago_studies.seeds import run_seeds\n"
        f"folder = Path({str(tmp_path)!r})\n"
        f"command = [sys.executable, '-c', {seed_code!r}]\n"
        "try:\n"
        "    run_seeds({0: command, 1: command}, {k: folder / f'seed_{k}.log' for k in (0, 1)}, parallel=2)\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    driver = subprocess.Popen([sys.executable, "-c", driver_code], stderr=subprocess.PIPE, text=True)
    logs = [tmp_path / f"seed_{k}.log" for k in (0, 1)]
    deadline = time.monotonic() + 30
    while not all(log.is_file() and "started" in log.read_text() for log in logs):
        assert time.monotonic() < deadline, "the seeds never started"
        time.sleep(0.05)
    driver.send_signal(signal.SIGTERM)
    assert driver.wait(30) == 130
    for log in logs:
        assert "got SIGTERM" in log.read_text()


def test_allow_traj_pickles_is_passed_to_every_seed_never_read_from_the_group(tmp_path):
    group = SeedGroup(tmp_path / "grp")
    assert "--allow-traj-pickles" in seed_command(group, 0, resume=False, allow_traj_pickles=True)
    assert "--allow-traj-pickles" not in seed_command(group, 0, resume=True)


@pytest.mark.parametrize("how", ["start", "resume"])
def test_the_group_lock_is_held_while_its_seeds_run(tmp_path, monkeypatch, how):
    from amago_core.experiment.run_lock import RunInUseError, acquire
    from amago_studies.seeds import start_group

    group = SeedGroup(tmp_path / "grp")
    refused: list[str] = []

    def fake_run_seeds(commands, logs, parallel, on_exit, **_):  # a second driver tries while seeds run
        with pytest.raises(RunInUseError) as caught:
            acquire(group.root, "another driver")
        refused.append(str(caught.value))
        for seed in commands:
            on_exit(seed, 0)
        return dict.fromkeys(commands, 0)

    monkeypatch.setattr(seeds_module, "run_seeds", fake_run_seeds)
    if how == "start":
        assert start_group(group, {"run": {}}, [0, 1], 1, ["amago", "run"]) == 0
    else:
        group.root.mkdir()
        group.write_record({"seeds": [0], "command": [], "parallel": 1, "exit_codes": {}})
        assert resume_group(group, parallel=None) == 0
    (line,) = refused
    assert f"pid {os.getpid()}" in line
    assert "seed group" in line
    assert not (group.root / ".amago.lock").exists()  # released once the group ended
    acquire(group.root, "the next driver").release()
