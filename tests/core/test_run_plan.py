"""`plan_run`: "what will run" decided once, from every source read once; what starts a run starts from a plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amago_core.config import sources
from amago_core.config.resolve import RunPlan, plan_run, resolve_config


def test_every_config_file_is_read_once(tmp_path, monkeypatch):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"env": "frozen-lake", "optim": {"batch_size": 5}}))
    second.write_text(json.dumps({"optim": {"learning_rate": 1e-3}}))
    reads = _count_reads(monkeypatch)
    # frozen-lake's preset follows the episode of the user's env options: a second merge, no second read.
    plan = plan_run([first, second], overrides=["env.size=6"], environ={})
    assert sorted(reads) == ["a.json", "b.json"]
    assert plan.config.optim.batch_size == 5
    assert plan.config.optim.learning_rate == 1e-3


def _count_reads(monkeypatch) -> list[str]:
    """The names of the config files opened from now on (every reader goes through read_raw_config_file)."""
    reads: list[str] = []
    real = sources.read_raw_config_file

    def counted(path):
        reads.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(sources, "read_raw_config_file", counted)
    return reads


def test_amago_run_reads_a_run_record_once_and_keeps_its_folder_settings_apart(tmp_path, monkeypatch, capsys):
    from amago_core.cli.run_cmd import resolve_run_config

    record = tmp_path / "config.resolved.json"
    record.write_text(
        json.dumps(
            {
                "env": "frozen-lake",
                "run": {"name": "theirs", "ckpt_base_dir": "/elsewhere"},
                "_provenance": {},
            }
        )
    )
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"replay": {"save_trajs_as": "traj"}}))
    reads = _count_reads(monkeypatch)
    plan = resolve_run_config([record, mine], [], {}, None)
    assert sorted(reads) == ["config.resolved.json", "mine.json"]
    assert list(plan.records) == [record]
    assert plan.records[record]["run"]["ckpt_base_dir"] == "/elsewhere"  # as written
    assert plan.config.run.ckpt_base_dir != "/elsewhere"  # never taken from a record
    assert plan.own["replay"]["save_trajs_as"] == "traj"  # the user's own file
    assert "run" not in plan.own
    assert "ignored run.ckpt_base_dir='/elsewhere'" in capsys.readouterr().err


def test_the_plan_keeps_what_the_user_set_apart_from_the_preset():
    plan = plan_run(flags={"env": "key-door"}, overrides=["optim.batch_size=3"], environ={})
    assert plan.user == {"env": "key-door", "optim": {"batch_size": 3}}
    assert plan.config.optim.batch_size == 3
    assert plan.config.agent.reward_multiplier == 100.0  # from the key-door preset, not in `user`
    assert plan.config == resolve_config(
        flags={"env": "key-door"}, overrides=["optim.batch_size=3"], environ={}
    )


def test_sizing_turns_a_plan_into_another_and_leaves_the_first_as_it_was():
    from amago_core.config.sizing import size_schedule

    plan = plan_run(flags={"env": "frozen-lake"}, environ={})
    smaller = plan.sized(size_schedule(plan.config, plan.user, 20_000))
    assert isinstance(smaller, RunPlan)
    assert smaller.user is plan.user
    assert smaller.config.schedule.epochs < plan.config.schedule.epochs
    with pytest.raises(AttributeError):
        plan.config = smaller.config  # type: ignore[misc]  # a frozen value


def test_an_experiment_starts_from_a_plan(tmp_path):
    from amago_core.experiment import Experiment

    plan = plan_run(flags={"env": "tmaze-passive", "run": {"ckpt_base_dir": str(tmp_path)}}, environ={})
    experiment = Experiment(plan)
    assert experiment.config.env == plan.config.env
    assert experiment.config.traj_encoder == plan.config.traj_encoder
