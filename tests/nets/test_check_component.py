"""Every installed built-in passes amago's generic ``check_component``, which dispatches to the nets checks."""

from __future__ import annotations

import pytest

from amago_core.testing.check import check_component


@pytest.mark.slow
@pytest.mark.parametrize(
    ("group", "name"),
    [
        *(("traj-encoders", name) for name in ("identity", "ff", "rnn", "gru", "transformer", "mamba")),
        *(("tstep-encoders", name) for name in ("ff", "cnn")),
    ],
)
def test_builtin_passes_check_component(group: str, name: str) -> None:
    report = check_component(group, name)
    assert report.passed[-1].endswith("behaviour checks")
