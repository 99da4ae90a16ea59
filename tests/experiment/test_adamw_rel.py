"""``optim.optimizer = adamw_rel``: AMAGO's AdamWRel (relative Adam timesteps), against AMAGO's own trajectories.

The fixture case ``adamw-rel`` (``tests/parity/agents_cases.py``) holds the parameters and step counts after each
of 10 updates of AMAGO v3.3.0's ``amago.utils.AdamWRel`` (reset every 3 updates; one parameter without gradients
for its first two updates, another missing one update), recorded by ``bench/agents_parity_vs_amago.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from amago import Experiment
from amago_core.config.experiment import OptimSection
from amago_core.config.sources import load_config
from amago_core.experiment.optimizers import GLOBAL_STEP_KEY, AdamWRel
from amago_core.experiment.safe_state import load_state, save_state

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "parity"))
import agents_cases

CASE = next(case for case in agents_cases.CASES if case["kind"] == "adamw_rel")


def test_the_trajectory_is_amagos_also_across_a_save_and_load() -> None:
    inputs, reference = agents_cases.read_fixture()[CASE["name"]]
    rows = agents_cases.compare(CASE, inputs, reference)
    failed = [f"{row.quantity}: max abs {row.max_abs:.3g}" for row in rows if not row.ok]
    assert len(rows) == 12
    assert not failed, failed
    # The case does reset: the step counts return to 0 every 3 updates (AMAGO's recorded counts).
    assert reference["out/step0"].tolist() == [1, 2, 0, 1, 2, 0, 1, 2, 0, 1]


def test_it_is_adamw_until_the_first_reset_and_larger_steps_after() -> None:
    torch.manual_seed(0)
    start = torch.randn(6)
    grads = torch.randn(5, 6)
    rel, plain = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    opt_rel = AdamWRel([rel], reset_interval=2, lr=1e-2, weight_decay=1e-3)
    opt_plain = torch.optim.AdamW([plain], lr=1e-2, weight_decay=1e-3)
    moves = []
    for step, grad in enumerate(grads):
        before_rel, before_plain = rel.detach().clone(), plain.detach().clone()
        rel.grad, plain.grad = grad.clone(), grad.clone()
        opt_rel.step()
        opt_plain.step()
        if step < 2:
            assert torch.equal(rel, plain)
        moves.append(((rel - before_rel).norm() / (plain - before_plain).norm()).item())
    assert moves[2] > 1.4  # the first update after a reset has a first step's bias correction
    assert opt_rel.global_step == 5
    assert float(opt_rel.state[rel]["step"]) == 1.0


def test_the_update_count_survives_the_run_folders_state_format(tmp_path: Path) -> None:
    param = torch.nn.Parameter(torch.ones(3))
    optimizer = AdamWRel([param], reset_interval=4, lr=1e-3)
    for _ in range(6):
        param.grad = torch.full((3,), 0.5)
        optimizer.step()
    save_state(optimizer.state_dict(), tmp_path, "optimizer")
    restored = AdamWRel([torch.nn.Parameter(torch.ones(3))], reset_interval=4, lr=1e-3)
    restored.load_state_dict(load_state(tmp_path, "optimizer"))
    assert restored.global_step == 6
    assert float(next(iter(restored.state.values()))["step"]) == 2.0
    assert GLOBAL_STEP_KEY not in restored.state_dict()["param_groups"][0]


def test_the_config_needs_reset_interval_with_adamw_rel_only() -> None:
    assert OptimSection().optimizer == "adamw"
    assert OptimSection().reset_interval is None
    assert OptimSection(optimizer="adamw_rel", reset_interval=50).reset_interval == 50
    with pytest.raises(ValidationError, match=r"optim\.reset_interval: optimizer adamw_rel needs"):
        OptimSection(optimizer="adamw_rel")
    with pytest.raises(ValidationError, match=r"optim\.reset_interval=5 does nothing with optimizer adamw"):
        OptimSection(reset_interval=5)
    with pytest.raises(ValidationError, match="greater than 0"):
        OptimSection(optimizer="adamw_rel", reset_interval=0)
    with pytest.raises(ValidationError, match="adamw_rel"):
        OptimSection(optimizer="adam")
    with pytest.raises(ValueError, match="at least 1"):
        AdamWRel([torch.nn.Parameter(torch.ones(1))], reset_interval=0)


def test_init_optimizer_builds_the_chosen_one(tmp_path: Path) -> None:
    module = torch.nn.Linear(3, 2)
    chosen = Experiment(
        env="tmaze-passive",
        ckpt_base_dir=tmp_path,
        optimizer="adamw_rel",
        reset_interval=7,
        learning_rate=3e-4,
    )
    optimizer = chosen.init_optimizer(module)
    assert isinstance(optimizer, AdamWRel)
    assert optimizer.reset_interval == 7
    assert optimizer.defaults["lr"] == 3e-4
    assert optimizer.defaults["weight_decay"] == 1e-3
    default = Experiment(env="tmaze-passive", ckpt_base_dir=tmp_path).init_optimizer(module)
    assert type(default).__name__ == "_UntracedAdamW"  # the fast AdamW path is unchanged


def test_a_run_resumes_with_its_reset_schedule(tiny_job: dict) -> None:
    tiny_job["optim"] = {**tiny_job["optim"], "optimizer": "adamw_rel", "reset_interval": 3}
    tiny_job["schedule"]["ckpt_interval"] = 100
    first = Experiment(load_config(base=tiny_job, environ={}), epochs=2)
    first.start()
    try:
        first.learn()
    finally:
        first.close()
    updates = first.grad_update_counter
    assert updates > 3
    resumed = Experiment(load_config(base=tiny_job, environ={}), epochs=3)
    resumed.start(resume=True)
    try:
        inner = getattr(resumed.optimizer, "optimizer", resumed.optimizer)  # accelerate's wrapper
        assert isinstance(inner, AdamWRel)
        assert inner.global_step == updates
        steps = {float(state["step"]) for state in inner.state.values()}
        assert steps == {float(updates % 3)}
    finally:
        resumed.close()
