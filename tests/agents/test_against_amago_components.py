"""``critic_init_value`` and discrete actions treated like continuous ones, against numbers AMAGO v3.3.0 produced.

The fixture (``tests/parity/fixtures/agents_amago-3.3.0.npz``) was written by
``bench/agents_parity_vs_amago.py --record``: AMAGO's weights and outputs for each case of
``tests/parity/agents_cases.py``. ``init_value`` cases: amago's own initial output bias, then AMAGO's other
weights, give AMAGO's initial bin probabilities and values (and the same refusal and edge warning).
``update`` cases: one learning update's losses, n-step targets and every gradient on AMAGO's weights, with
deterministic Gumbel noise on both sides. Tolerance: ``|d| <= 1e-5 + 1e-4·|AMAGO|`` (``parity_cases``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "parity"))
import agents_cases

torch.set_num_threads(1)

FIXTURE = agents_cases.read_fixture()
CASES = {case["name"]: case for case in agents_cases.CASES if case["kind"] != "adamw_rel"}


def test_every_case_is_recorded() -> None:
    """A case added to agents_cases must be recorded from AMAGO (bench/agents_parity_vs_amago.py --record)."""
    assert sorted(FIXTURE) == sorted(case["name"] for case in agents_cases.CASES)


def test_recorded_inputs_are_the_cases_inputs() -> None:
    for name, case in CASES.items():
        inputs, _ = FIXTURE[name]
        fresh = agents_cases.make_inputs(case)
        assert sorted(fresh) == sorted(inputs), name
        for key, value in fresh.items():
            assert (value == inputs[key]).all(), f"{name}: {key}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_amago(name: str) -> None:
    inputs, reference = FIXTURE[name]
    rows = agents_cases.compare(CASES[name], inputs, reference)
    failed = [row for row in rows if not row.ok]
    report = "; ".join(
        f"{row.quantity}: max abs {row.max_abs:.3g}, max rel {row.max_rel:.3g} {row.note}".strip()
        for row in failed
    )
    assert rows
    assert not failed, f"{name} differs from AMAGO v3.3.0: {report}"


def test_the_gumbel_path_is_what_the_update_case_checks() -> None:
    """The multitask update's actor gradient depends on the Gumbel-softmax temperature: the case covers the
    straight-through path, not only the one-hot values."""
    name = "multitask-discrete-online-ff"
    case = {**CASES[name], "agent_kwargs": {**CASES[name]["agent_kwargs"], "gumbel_temperature": 1.0}}
    inputs, reference = FIXTURE[name]
    rows = agents_cases.compare(case, inputs, reference)
    assert any(not row.ok and row.quantity.startswith("grad actor") for row in rows)
