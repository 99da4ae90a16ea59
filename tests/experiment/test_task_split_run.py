"""A run records which tasks its splits draw (task_split.json), and `amago eval --tasks` picks what to score on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amago_core.cli.app import app
from amago_core.config.task_split import TASK_SPLIT_FILE, task_split_of

runner = CliRunner()

POOL = 5
LAKE_JOB_ENV = {"id": "frozen-lake", "size": 3, "k_episodes": 2, "train_tasks": POOL}
LAKE_EPISODE = 2 * 3 * 3  # k_episodes attempts of size² steps


def train(job: dict, tmp_path: Path, name: str) -> Path:
    config_file = tmp_path / f"{name}.json"
    config_file.write_text(json.dumps(job))
    trained = runner.invoke(app, ["run", "-c", str(config_file), "-o", "schedule.epochs=2", "--quiet"])
    assert trained.exit_code == 0, trained.output
    return Path(job["run"]["ckpt_base_dir"]) / job["run"]["name"]


def lake_job(tiny_job: dict, *, train_tasks: int | None = POOL) -> dict:
    job = dict(tiny_job)
    job["env"] = {**LAKE_JOB_ENV, "train_tasks": train_tasks}
    job["run"] = {**tiny_job["run"], "max_seq_len": LAKE_EPISODE, "name": f"lake{train_tasks}"}
    job["replay"] = {"traj_save_len": LAKE_EPISODE}
    return job


def eval_json(run_dir: Path, *args: str) -> dict:
    result = runner.invoke(app, ["eval", str(run_dir), "--timesteps", str(LAKE_EPISODE), *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_no_record_reads_as_none(tmp_path):
    assert task_split_of(tmp_path) is None
    (tmp_path / TASK_SPLIT_FILE).write_text("{not json")
    assert task_split_of(tmp_path) is None
    (tmp_path / TASK_SPLIT_FILE).write_text("[1, 2]")
    assert task_split_of(tmp_path) is None


@pytest.mark.slow
def test_a_pooled_run_records_its_tasks_and_evaluates_on_unseen_ones(tiny_job, tmp_path):
    run_dir = train(lake_job(tiny_job), tmp_path, "lake")

    record = task_split_of(run_dir)
    assert record is not None
    assert record["format"] == 1
    assert record["suite"] == "frozen_lake"
    assert record["can_tell"] is True
    assert record["env_name"] == "MetaFrozenLake-k2-3x3-easy-reset"
    assert record["splits"]["train"]["description"] == f"lake seeds 0..{POOL - 1} (the training pool)"
    assert record["splits"]["val"] == record["splits"]["train"]
    assert record["splits"]["test"]["held_out"] is True
    assert record["unseen"]["first"] == POOL
    assert record == json.loads((run_dir / TASK_SPLIT_FILE).read_text())  # plain JSON, nothing else

    unseen = eval_json(run_dir, "--tasks", "unseen")
    assert unseen["tasks"]["choice"] == "unseen"
    assert unseen["tasks"]["held_out"] is True
    assert unseen["tasks"]["first"] == POOL
    assert any(key.startswith("Average Total Return") for key in unseen)

    val = eval_json(run_dir, "--tasks", "val")
    assert val["tasks"] == {"choice": "val", "suite": "frozen_lake", **record["splits"]["val"]}

    default = eval_json(run_dir)
    assert default["tasks"]["choice"] == "test"
    assert default["tasks"]["held_out"] is True
    assert task_split_of(run_dir) == record  # evaluating leaves the training's record alone
    # Each pass logs under its own section: only the run's test split counts as its `test/` result.
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    sections = {
        key.split("/")[0]
        for r in records
        for key in r
        if key.endswith("Average Total Return (Across All Env Names)")
    }
    assert {"test-unseen", "test-val", "test"} <= sections
    unseen_keys = [r for r in records if "test-unseen/Average Total Return (Across All Env Names)" in r]
    assert len(unseen_keys) == 1

    typo = runner.invoke(app, ["eval", str(run_dir), "--tasks", "unsen"])
    assert typo.exit_code != 0
    assert "unseen" in typo.stderr
    assert typo.stderr.count("\n") == 1


@pytest.mark.slow
@pytest.mark.parametrize("env", ["tmaze", "frozen-lake"])
def test_eval_unseen_on_a_suite_that_cannot_tell_fails_in_one_line(tiny_job, tmp_path, env):
    job = tiny_job if env == "tmaze" else lake_job(tiny_job, train_tasks=None)
    run_dir = train(job, tmp_path, env)
    record = task_split_of(run_dir)
    assert record is not None
    assert record["can_tell"] is False
    assert record["unseen"] is None

    result = runner.invoke(app, ["eval", str(run_dir), "--tasks", "unseen"])
    assert result.exit_code != 0
    assert result.stderr.count("\n") == 1
    if env == "tmaze":
        assert "env suite 'tmaze' cannot make unseen (held-out) tasks" in result.stderr
    else:
        assert "env suite 'frozen_lake' cannot make unseen" in result.stderr
        assert "set env.train_tasks" in result.stderr


def test_the_record_comes_from_the_makers_suite(tmp_path):
    from amago_core.config.task_split import write_task_split
    from amago_core.experiment.pools import suite_makers
    from amago_envs.suites.frozen_lake import FrozenLakeSuite
    from amago_envs.suites.specs import FrozenLakeConfig

    assert not write_task_split(tmp_path, [lambda: None, None])  # Python makers: the script knows its tasks
    assert task_split_of(tmp_path) is None

    makers = suite_makers(FrozenLakeSuite(FrozenLakeConfig(train_tasks=7)))
    assert write_task_split(tmp_path, [None, makers["val"], makers["test"]])
    record = task_split_of(tmp_path)
    assert record is not None
    assert record["unseen"]["first"] == 7
    assert record["splits"]["train"]["count"] == 7
    assert [p.name for p in tmp_path.iterdir()] == [TASK_SPLIT_FILE]  # written atomically, no temp file left
