"""`amago eval RUN --attempts K --context L`: success (or return) by attempt with 95 % intervals over trials,
``attempts.json`` / ``attempts.png`` in the run, and a verdict on the attempts past the trained ones."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.config.sources import load_config
from amago_core.rollout import AMAGOEnv
from amago_envs.suites.frozen_lake import MetaFrozenLake
from amago_nets.traj_transformer import TransformerTrajEncoder
from amago_tools.eval_attempts import (
    AttemptsPlan,
    TrialRecorder,
    _context_overrides,
    _key_pattern,
    build_report,
    interval,
    t_95,
    verdict,
)

runner = CliRunner()

TINY: dict[str, Any] = {
    "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 16},
    "traj_encoder": {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1},
    "exploration": {"kind": "egreedy", "steps_anneal": 100},
    "run": {"max_seq_len": 8, "seed": 3, "torch_threads": 1},
    "replay": {"traj_save_len": 8},
    "rollout": {"parallel_actors": 2},
    "schedule": {
        "epochs": 1,
        "train_timesteps_per_epoch": 8,
        "train_batches_per_epoch": 2,
        "val_interval": 1,
        "val_timesteps_per_epoch": 8,
        "ckpt_interval": 1,
    },
    "optim": {"batch_size": 4, "lr_warmup_steps": 10, "mixed_precision": "no"},
    "logging": {"verbose": False, "plot": False},
}
LAKE = {"id": "frozen-lake", "size": 3, "k_episodes": 2, "show_k_progress": False}
"""Two attempts of at most 9 steps per 3x3 lake (18-step trials, longer than the 8-step memory); no attempt
counter in the observation, so evaluating more attempts shows the policy nothing it was not trained on."""
WIND = {"id": "wind", "k_train": 2, "k_eval": 3, "max_episode_steps": 4, "n_tasks": 4}


def train(tmp_path: Path, name: str, env: dict[str, Any], **sections: dict[str, Any]) -> Path:
    job = {**TINY, "env": env, "run": {**TINY["run"], "ckpt_base_dir": str(tmp_path / "runs")}}
    for section, values in sections.items():
        job[section] = {**job[section], **values}
    config = tmp_path / f"{name}.json"
    config.write_text(json.dumps(job))
    result = runner.invoke(app, ["run", "-c", str(config), "--name", name, "--quiet"])
    assert result.exit_code == 0, result.output
    return tmp_path / "runs" / name


def evaluate(run_dir: Path, *args: str) -> tuple[dict[str, Any], str]:
    result = runner.invoke(app, ["eval", str(run_dir), *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def refused(run_dir: Path, *args: str) -> str:
    result = runner.invoke(app, ["eval", str(run_dir), *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr


def check_rows(report: dict[str, Any], attempts: int, trials: int) -> None:
    assert [row["attempt"] for row in report["rows"]] == list(range(1, attempts + 1))
    for row in report["rows"]:
        assert row["trials"] == trials
        assert row["low"] <= row["mean"] <= row["high"]
        assert row["low"] >= 0.0
        assert row["high"] <= 1.0


@pytest.mark.slow
@pytest.mark.filterwarnings(
    "ignore:run.max_seq_len=8 is shorter than one episode"
)  # on purpose: it rolls over
def test_frozen_lake_more_attempts_and_a_shorter_context_than_trained(tmp_path):
    run_dir = train(tmp_path, "lake", LAKE)

    out, err = evaluate(run_dir, "--attempts", "5", "--episodes", "8")
    report = out["attempts"]
    assert (report["suite"], report["metric"], report["attempts"], report["trained_attempts"]) == (
        "frozen-lake",
        "success",
        5,
        2,
    )
    assert out["episodes_evaluated"] == report["trials"] == 8  # --episodes counts whole trials
    check_rows(report, 5, 8)
    assert report["files"] == [str(run_dir / "attempts.json"), str(run_dir / "attempts.png")]
    assert (run_dir / "attempts.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    written = json.loads((run_dir / "attempts.json").read_text())
    assert written["verdict"] == report["verdict"]
    for mine, printed in zip(written["rows"], report["rows"], strict=True):  # the printed JSON rounds floats
        assert mine == pytest.approx(printed, abs=1e-5)
    (line,) = err.splitlines()
    assert line == f"amago: attempts: {report['verdict']}"
    assert "the last trained attempt, 2" in line
    assert line.removeprefix("amago: attempts: ").startswith(("collapse: attempt ", "no collapse: "))

    # A 4-step memory (the run's is 8) over 18-step trials: the cache rolls over; the run's own 2 attempts.
    out, _ = evaluate(run_dir, "--context", "4", "--episodes", "4", "--tasks", "train")
    report = out["attempts"]
    assert (report["context"], report["trained_context"], report["attempts"]) == (4, 8, 2)
    check_rows(report, 2, 4)
    assert "nothing is past the training horizon" in report["verdict"]
    # The test tasks' file is kept, and so is each context's.
    assert report["files"][0] == str(run_dir / "attempts-train-context4.json")

    # Async pools: each worker process writes its own env's trials.
    out, _ = evaluate(run_dir, "--attempts", "3", "--episodes", "4", "-o", "rollout.env_mode=async")
    check_rows(out["attempts"], 3, 4)

    # A suite without attempts (a T-Maze of the same spaces is not needed: the check comes first).
    line = refused(run_dir, "--env", "tmaze-passive", "--attempts", "3")
    assert "--attempts does not apply to tmaze" in line
    assert "frozen-lake" in line
    assert "wind" in line
    assert "pass one of them" in refused(run_dir, "--attempts", "3", "-o", "env.k_episodes=4")


@pytest.mark.slow
def test_wind_attempts_past_training_with_a_rolling_cache_and_learnable_positions(tmp_path, monkeypatch):
    traj = {"pos_emb": "learnable", "max_time_idx": 64}
    run_dir = train(
        tmp_path, "wind", WIND, traj_encoder=traj, run={"max_seq_len": 6}, replay={"traj_save_len": 6}
    )
    contexts: list[int] = []
    built = TransformerTrajEncoder.__init__

    def spy(self: Any, *args: Any, **kwargs: Any) -> None:
        built(self, *args, **kwargs)
        contexts.append(self.context)

    monkeypatch.setattr(TransformerTrajEncoder, "__init__", spy)

    # 6 attempts of 4 steps (24-step trials, the run's val horizon is 8) in a 3-step memory.
    out, err = evaluate(run_dir, "--attempts", "6", "--context", "3", "--episodes", "4")
    report = out["attempts"]
    assert (report["attempts"], report["trained_attempts"], report["context"]) == (6, 2, 3)
    check_rows(report, 6, 4)
    assert contexts
    assert set(contexts) == {3}
    assert [row["attempt"] for row in report["other_metrics"]["return"]] == list(range(1, 7))
    # A context other than the trained one keeps its own files.
    assert report["files"] == [
        str(run_dir / "attempts-context3.json"),
        str(run_dir / "attempts-context3.png"),
    ]
    assert (run_dir / "attempts-context3.png").is_file()
    assert err.startswith("amago: attempts: ")
    assert err.count("\n") == 1

    line = refused(run_dir, "--context", "7")
    assert "--context 7 is above the 6 steps" in line
    assert "learnable" in line


def test_verdict_names_a_collapse_with_the_interval_of_the_drop():
    # Trained on 2 attempts: attempt 2 solves 9 of 10 trials, attempt 3 only 3 of them.
    second = [1.0] * 9 + [0.0]
    third = [1.0] * 3 + [0.0] * 7
    line = verdict("success", [[0.0] * 10, second, third], trained=2, trials=10)
    assert line.startswith(
        "collapse: attempt 3 scores 0.3 success, 0.6 below the last trained attempt, 2 (0.9 "
    )
    assert "95 % interval of the drop" in line
    assert "within noise" not in line


def test_verdict_says_rising_flat_or_not_rising():
    up = verdict("success", [[0.0, 0.0], [0.0, 1.0], [1.0, 1.0]], trained=2, trials=2)
    assert up.startswith("no collapse")
    assert up.endswith("rising to the end")
    flat = verdict("return", [[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]], trained=2, trials=2)
    assert flat.endswith("flat")
    peak = verdict("return", [[1.0], [1.0], [3.0], [2.0]], trained=2, trials=1)
    assert peak.endswith("best at attempt 3 (3), not rising to the end")
    assert "too few for an interval" in peak
    assert "pass --attempts above 2" in verdict("success", [[1.0], [1.0]], trained=2, trials=1)
    assert "raise --timesteps" in verdict("success", [[], []], trained=1, trials=0)


def test_intervals():
    low, high = interval([0.0] * 12)  # Wilson: no success in 12 trials still allows up to ~24 %
    assert low == 0.0
    assert high == pytest.approx(0.2425, abs=1e-4)
    low, high = interval([1.0, 2.0, 3.0])  # Student's t, 2 degrees of freedom
    assert (low, high) == pytest.approx((2 - 4.303 / math.sqrt(3), 2 + 4.303 / math.sqrt(3)))
    assert interval([2.5]) is None
    assert interval([]) is None
    # scipy's t.ppf(0.975, df): the expansion past the table is within 0.001 of it.
    assert [t_95(df) for df in (15, 16, 30, 100)] == pytest.approx([2.1314, 2.1199, 2.0423, 1.9840], abs=1e-3)


def test_the_report_reads_1_based_and_0_based_keys_and_finds_attempts_past_k():
    plan = AttemptsPlan("babyai", 2, 2, 8, 8, {"success": "Episode {n} Success"})
    trials = [{"Episode 1 Success": 0.0, "Episode 2 Success": 1.0, "Episode 3 Success": 1.0}]
    report = build_report(plan, trials)
    assert [(r["attempt"], r["mean"]) for r in report["rows"]] == [(1, 0.0), (2, 1.0), (3, 1.0)]
    plan = AttemptsPlan("wind", 3, 2, 8, 8, {"success": "Trial {i} Success", "return": "Trial {i} Return"})
    report = build_report(plan, [{"Trial 0 Success": 1.0, "Trial 0 Return": 2.5}])
    assert [r["trials"] for r in report["rows"]] == [1, 0, 0]  # attempts not logged have no mean
    assert report["other_metrics"]["return"][0]["mean"] == 2.5


def test_a_recorder_writes_whole_trials_only(tmp_path):
    path = tmp_path / "env_0.jsonl"
    env = AMAGOEnv(MetaFrozenLake(size=3, k_episodes=3, show_k_progress=False), env_name="lake")
    env.env = TrialRecorder(env.env, path, _key_pattern("Episode {i} Success"))
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    finished = 0
    while finished < 2:
        _, _, terminated, truncated, _ = env.step(rng.integers(5, size=1))
        if terminated.any() or truncated.any():
            finished += 1
            env.reset()
    env.step(np.array([0]))  # a third trial begun, then the evaluation ends: not written
    trials = [json.loads(line) for line in path.read_text().splitlines()]
    assert [sorted(t) for t in trials] == [[f"Episode {i} Success" for i in range(3)]] * 2


@pytest.mark.parametrize(
    ("encoder", "says"),
    [
        ({"kind": "rnn"}, "carries its state through the whole trial"),
        ({"kind": "ff"}, "has none"),
        ({"kind": "transformer", "window_size": 4}, "window_size=4"),
    ],
)
def test_context_needs_a_memory_window(encoder, says, capsys):
    config = load_config(base={"env": LAKE, "traj_encoder": encoder}, environ={}).resolved()
    with pytest.raises(typer.Exit):
        _context_overrides(config, config, 4)
    (line,) = capsys.readouterr().err.splitlines()
    assert says in line
    assert "drop --context" in line


def test_a_longer_context_than_trained_grows_the_files_it_would_never_write():
    config = load_config(base={**TINY, "env": LAKE}, environ={}).resolved()
    assert _context_overrides(config, config, 12) == ["run.max_seq_len=12", "replay.traj_save_len=12"]
    assert _context_overrides(config, config, 4) == ["run.max_seq_len=4"]
