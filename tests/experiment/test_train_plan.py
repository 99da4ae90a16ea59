"""One way to start a run: ``Experiment(plan)`` builds from the plan's resolved components (nothing resolved
twice), and ``train(plan)`` is what ``amago run`` does."""

from __future__ import annotations

from typing import Any

from amago import Experiment
from amago_core.config.components import RunComponents
from amago_core.config.resolve import plan_run
from amago_core.experiment.train import train


def test_an_experiment_of_a_plan_builds_the_plans_components_without_resolving_again(tiny_job, monkeypatch):
    plan = plan_run(flags=tiny_job, environ={})
    planned = plan.components
    calls: list[Any] = []
    original = RunComponents.resolve.__func__  # type: ignore[attr-defined]

    def counting(cls, *args, **kwargs):
        calls.append(args)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(RunComponents, "resolve", classmethod(counting))
    experiment = Experiment(plan)
    assert experiment.components is planned
    assert experiment.config is plan.config
    assert calls == []


def test_keywords_over_a_plan_resolve_the_changed_config(tiny_job):
    plan = plan_run(flags=tiny_job, environ={})
    experiment = Experiment(plan, traj_encoder_type="rnn")
    assert experiment.components is not plan.components
    assert experiment.components.traj_encoder.name == "rnn"
    assert plan.components.traj_encoder.name == "transformer"


def test_a_sized_plan_resolves_its_own_components(tiny_job):
    plan = plan_run(flags=tiny_job, environ={})
    sized = plan.sized({"traj_encoder": {"kind": "rnn"}})
    assert sized.components.traj_encoder.name == "rnn"
    assert plan.components.traj_encoder.name == "transformer"


def test_train_runs_the_plan_to_its_final_test_and_summarises_it(tiny_job):
    result = train(plan_run(flags=tiny_job, environ={}))
    summary = result.summary()
    assert summary["epochs"] == tiny_job["schedule"]["epochs"]
    assert summary["env"] == "tmaze-passive"
    assert result.final_test is not None
    assert summary["final_test"] == result.final_test
    assert [p.name for p in result.outputs] == [p.rsplit("/", 1)[1] for p in summary["plots"]]
    assert result.experiment.paths.root.name == "tiny"
