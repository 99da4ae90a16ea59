"""amago against numbers the real AMAGO v3.3.0 produced (the fixture ``bench/parity_vs_amago.py --record`` wrote).

Each case loads AMAGO's weights into amago's agent through the importer users run (``amago.from_amago``), feeds
the recorded inputs, and compares: n-step targets, critic/actor/total loss, every parameter's gradient, PopArt
and input statistics, initial weight spreads, two-hot/HL-Gauss labels, epsilon per step, and rollouts with
staggered resets. No AMAGO install is needed; a drift from AMAGO's math fails here.
"""

from __future__ import annotations

import parity_cases
import pytest
import torch

torch.set_num_threads(1)

FIXTURE = parity_cases.read_fixture()
CASES = {case["name"]: case for case in parity_cases.CASES}


def test_every_case_is_recorded() -> None:
    """A case added to parity_cases must be recorded from AMAGO (rerun bench/parity_vs_amago.py --record)."""
    assert sorted(FIXTURE) == sorted(CASES)


def test_recorded_inputs_are_the_cases_inputs() -> None:
    """The fixture's inputs are what make_inputs gives today, so the cases still describe what was recorded."""
    for name, case in CASES.items():
        inputs, _ = FIXTURE[name]
        fresh = parity_cases.make_inputs(case)
        assert sorted(fresh) == sorted(inputs), name
        for key, value in fresh.items():
            assert (value == inputs[key]).all(), f"{name}: {key}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_amago(name: str) -> None:
    inputs, reference = FIXTURE[name]
    rows = parity_cases.compare(CASES[name], inputs, reference)
    failed = [row for row in rows if not row.ok]
    report = "; ".join(
        f"{row.quantity}: max abs {row.max_abs:.3g}, max rel {row.max_rel:.3g} {row.note}".strip()
        for row in failed
    )
    assert not failed, f"{name} differs from AMAGO v3.3.0: {report}"
