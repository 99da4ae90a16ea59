"""Value bins: two-hot labels round-trip, expected values, HL-Gauss labels."""

from __future__ import annotations

import pytest
import torch

from amago_agents.twohot import ValueBins, symexp, symlog


def test_symlog_symexp_inverse() -> None:
    x = torch.tensor([-1e4, -3.0, -0.5, 0.0, 0.2, 7.0, 1e5])
    torch.testing.assert_close(symexp(symlog(x)), x)


@pytest.mark.parametrize("use_symlog", [True, False])
def test_twohot_round_trip(use_symlog: bool) -> None:
    bins = ValueBins(-500.0, 2000.0, 64, use_symlog=use_symlog)
    values = torch.tensor([-499.0, -13.7, -0.3, 0.0, 0.01, 1.5, 42.0, 1999.0])
    labels = bins.to_labels(values)
    assert labels.shape == (8, 64)
    torch.testing.assert_close(labels.sum(-1), torch.ones(8))
    assert ((labels > 0).sum(-1) <= 2).all()
    nonzero = labels.nonzero()
    for row in range(8):
        cols = nonzero[nonzero[:, 0] == row, 1]
        assert cols.max() - cols.min() <= 1, "two-hot mass must sit on adjacent bins"
    torch.testing.assert_close(bins.to_values(labels), values, rtol=1e-4, atol=1e-4)


def test_values_outside_the_range_clamp_to_the_edges() -> None:
    bins = ValueBins(-10.0, 10.0, 8)
    labels = bins.to_labels(torch.tensor([-1e6, 1e6]))
    assert labels[0, 0] == 1.0
    assert labels[1, -1] == 1.0
    torch.testing.assert_close(bins.to_values(labels), torch.tensor([-10.0, 10.0]))


def test_expected_value_is_taken_in_symlog_space() -> None:
    bins = ValueBins(-100.0, 100.0, 5)
    centres = bins.centres
    probs = torch.tensor([0.0, 0.0, 0.5, 0.5, 0.0])
    expected = symexp(0.5 * centres[2] + 0.5 * centres[3])
    torch.testing.assert_close(bins.to_values(probs), expected)
    torch.testing.assert_close(
        bins.logits_to_values(torch.tensor([0.0, 0.0, 9.0, 9.0, 0.0])), expected, atol=1e-2, rtol=1e-3
    )
    one_bin = torch.zeros(5)
    one_bin[4] = 1.0
    torch.testing.assert_close(bins.to_values(one_bin), torch.tensor(100.0))


def test_hlgauss_labels_centre_on_the_value() -> None:
    bins = ValueBins(-100.0, 100.0, 51, label_type="hlgauss", hlgauss_sigma=0.75)
    values = torch.tensor([-20.0, 0.0, 3.0, 60.0])
    labels = bins.to_labels(values)
    torch.testing.assert_close(labels.sum(-1), torch.ones(4))
    assert ((labels > 1e-3).sum(-1) >= 3).all(), "HL-Gauss spreads mass over several bins"
    decoded = symlog(bins.to_values(labels))
    torch.testing.assert_close(decoded, symlog(values), atol=bins.width * 0.1, rtol=0)
