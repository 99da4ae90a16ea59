"""A subclass of ``Experiment`` that overrides one of AMAGO's override points is what the loop runs.

``Experiment`` delegates collection and evaluation to its ``EnvRunner`` and keeps these methods as the points a
user overrides; each test subclasses one of them and checks that the loop (or the call a user makes) went
through the override, and that an override that changes something changes the run.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from amago_core.config.sources import load_config
from amago_core.experiment import Experiment

pytestmark = pytest.mark.slow  # 14 tiny runs: ~35 s on 2 cores

OVERRIDE_POINTS = (
    "init_dsets",
    "init_envs",
    "init_model",
    "init_optimizer",
    "init_dloaders",
    "compute_loss",
    "train_step",
    "interact",
    "collect_new_training_data",
    "evaluate_val",
    "evaluate_test",
)


def _recording(name: str, calls: list[str]) -> type[Experiment]:
    """A subclass whose ``name`` records each call, then does what ``Experiment`` does."""

    def override(self: Experiment, *args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return getattr(Experiment, name)(self, *args, **kwargs)

    return type(f"Overrides_{name}", (Experiment,), {name: override})


def _train(cls: type[Experiment], job: dict[str, Any]) -> Experiment:
    experiment = cls(load_config(base=job, environ={}))
    experiment.start()
    try:
        experiment.learn()
        experiment.evaluate_test(experiment.make_val_env, 4)
    finally:
        experiment.close()
    return experiment


@pytest.mark.parametrize("name", OVERRIDE_POINTS)
def test_the_loop_calls_the_overriding_method(name, tiny_job):
    tiny_job["schedule"] = {**tiny_job["schedule"], "epochs": 2}
    calls: list[str] = []
    _train(_recording(name, calls), tiny_job)
    assert name in calls


def test_an_overridden_interact_runs_collection_validation_and_the_test(tiny_job):
    # The env runner is handed the experiment's interact: a subclass's rollout loop is the one every phase uses.
    phases: list[str] = []

    class Tagged(Experiment):
        def interact(self, envs: Any, timesteps: int, *args: Any, **kwargs: Any) -> Any:
            phases.append(kwargs.get("desc", "interact").split(" ")[0])
            return super().interact(envs, timesteps, *args, **kwargs)

    tiny_job["schedule"] = {**tiny_job["schedule"], "epochs": 1}
    _train(Tagged, tiny_job)
    assert {"collect", "evaluate", "test"} <= set(phases)


def _weights_before_and_after_one_epoch(cls: type[Experiment], job: dict[str, Any]) -> tuple[list, list, int]:
    """The agent's parameters before and after one epoch of ``cls``, and the gradient steps it took."""
    job["schedule"] = {**job["schedule"], "epochs": 1}
    experiment = cls(load_config(base=job, environ={}))
    experiment.start()
    try:
        before = [p.detach().clone() for p in experiment.policy.parameters()]
        experiment.learn()
        return before, list(experiment.policy.parameters()), experiment.grad_update_counter
    finally:
        experiment.close()


def test_an_overridden_optimizer_is_the_one_that_steps(tiny_job):
    class FrozenWeights(Experiment):
        def init_optimizer(self, policy: torch.nn.Module) -> torch.optim.Optimizer:
            return torch.optim.SGD(policy.parameters(), lr=0.0)

    before, after, updates = _weights_before_and_after_one_epoch(FrozenWeights, tiny_job)
    assert updates > 0
    # lr 0: every update left the weights as they were (AdamW's would have moved them).
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_an_overridden_loss_is_what_the_optimiser_minimises(tiny_job):
    class NoLoss(Experiment):
        def compute_loss(self, batch: Any, log_step: bool) -> tuple[torch.Tensor, dict[str, Any]]:
            loss, metrics = super().compute_loss(batch, log_step)
            return loss * 0.0, metrics

    tiny_job["optim"] = {**tiny_job["optim"], "l2_coeff": 0.0}
    before, after, updates = _weights_before_and_after_one_epoch(NoLoss, tiny_job)
    assert updates > 0
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
