"""``rollout.policy_threads``: the policy acts with its own CPU thread count, and the update keeps its own."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from amago_core.experiment.processes import torch_threads_while


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_threads_are_set_inside_the_block_and_restored_after(restore_threads) -> None:
    torch.set_num_threads(2)
    with torch_threads_while(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with torch_threads_while(None):
        assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError), torch_threads_while(1):
        raise RuntimeError
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize(("policy_threads", "acting"), [(1, 1), (None, 2)])
def test_collection_acts_with_policy_threads_and_training_keeps_torch_threads(
    tiny_job, restore_threads, policy_threads: int | None, acting: int
) -> None:
    from amago_core.config.sources import load_config
    from amago_core.experiment import Experiment

    job: dict[str, Any] = {**tiny_job, "run": {**tiny_job["run"], "torch_threads": 2}}
    job["rollout"] = {**job.get("rollout", {}), "policy_threads": policy_threads}
    experiment = Experiment(load_config(base=job, environ={}))
    experiment.start()
    try:
        seen: list[int] = []
        act = experiment.policy.get_actions

        def counting(*args: Any, **kwargs: Any) -> Any:
            seen.append(torch.get_num_threads())
            return act(*args, **kwargs)

        experiment.policy.get_actions = counting
        experiment.collect_new_training_data()
        assert seen
        assert set(seen) == {acting}
        assert torch.get_num_threads() == 2  # what the update trains with, restored after acting
    finally:
        experiment.close()
