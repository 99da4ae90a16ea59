"""amago-nets' rational activation and sliding-sink attention against numbers AMAGO v3.3.0 produced.

The fixture (``tests/parity/fixtures/nets_amago-3.3.0.npz``) was written by ``bench/nets_parity_vs_amago.py
--record``, which ran AMAGO's ``SlowAdaptiveRational`` and ``ClippedSlidingSinkAttention`` in AMAGO's own venv;
``tests/parity/nets_parity_cases.py`` says what each case holds. No AMAGO install is needed here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "parity"))
import nets_parity_cases as cases

FIXTURE = cases.read_fixture()
CASES = {case["name"]: case for case in cases.CASES}


def test_every_case_is_recorded() -> None:
    """A case added to nets_parity_cases must be recorded from AMAGO (bench/nets_parity_vs_amago.py --record)."""
    assert sorted(FIXTURE) == sorted(CASES)


def test_recorded_inputs_are_the_cases_inputs() -> None:
    """The fixture's inputs are what make_inputs gives today, so the cases still describe what was recorded."""
    for name, case in CASES.items():
        inputs, _ = FIXTURE[name]
        fresh = cases.make_inputs(case)
        assert sorted(fresh) == sorted(inputs), name
        for key, value in fresh.items():
            np.testing.assert_array_equal(value, inputs[key], err_msg=f"{name}: {key}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_amago(name: str) -> None:
    inputs, reference = FIXTURE[name]
    rows = cases.compare(CASES[name], inputs, reference)
    failed = [row for row in rows if not row.ok]
    report = "; ".join(
        f"{r.quantity}: max abs {r.max_abs:.3g}, max rel {r.max_rel:.3g} {r.note}" for r in failed
    )
    assert not failed, f"{name} differs from AMAGO v3.3.0: {report}"
