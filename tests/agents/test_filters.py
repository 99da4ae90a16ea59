"""The advantage filters of filtered behaviour cloning."""

from __future__ import annotations

import math

import pytest
import torch

from amago_agents.filters import binary_filter, exp_filter, leaky_relu_filter, make_filter
from amago_agents.specs import BinaryFilterConfig, ExpFilterConfig, LeakyReluFilterConfig


def test_binary_filter() -> None:
    adv = torch.tensor([-1.0, 0.0, 1e-3, 2.0])
    torch.testing.assert_close(binary_filter(adv), torch.tensor([0.0, 0.0, 1.0, 1.0]))
    torch.testing.assert_close(binary_filter(adv, threshold=1.0), torch.tensor([0.0, 0.0, 0.0, 1.0]))


def test_exp_filter() -> None:
    adv = torch.tensor([-100.0, 0.0, 1.0])
    torch.testing.assert_close(exp_filter(adv, beta=2.0), torch.tensor([1e-7, 1.0, math.exp(2.0)]))
    clipped = exp_filter(adv, beta=1.0, adv_clip_low=-1.0, adv_clip_high=0.5, weight_clip_high=1.5)
    torch.testing.assert_close(clipped, torch.tensor([math.exp(-1.0), 1.0, 1.5]))


def test_leaky_relu_filter_hits_target_at_zero_and_clips() -> None:
    adv = torch.tensor([-1e6, 0.0, 0.01 + 2.0, 1e6])
    no_binary = leaky_relu_filter(adv, add_binary=False)
    torch.testing.assert_close(no_binary[1], torch.tensor(1e-2))  # f(0) = target_f0
    assert no_binary[0] == pytest.approx(1e-7)  # clipped below
    # Above tau the weight rises by 1 per beta: at A = tau + beta it is bias + 1.
    assert no_binary[2].item() == pytest.approx(1e-2 + 0.05 * 0.01 / 2.0 + 1.0)
    assert no_binary[3] == pytest.approx(10.0)  # clipped above
    with_binary = leaky_relu_filter(adv)
    torch.testing.assert_close(with_binary - no_binary, torch.tensor([0.0, 0.0, 1.0, 1.0]))
    # Below tau the slope is negative_slope / beta: poor actions keep a small, decreasing weight.
    near, far = leaky_relu_filter(torch.tensor([-0.1, -0.2]), add_binary=False)
    assert (near - far).item() == pytest.approx(0.1 * 0.05 / 2.0)


@pytest.mark.parametrize(
    ("config", "function"),
    [
        (BinaryFilterConfig(threshold=0.5), lambda a: binary_filter(a, 0.5)),
        (ExpFilterConfig(beta=0.3), lambda a: exp_filter(a, 0.3)),
        (LeakyReluFilterConfig(beta=4.0), lambda a: leaky_relu_filter(a, beta=4.0)),
    ],
)
def test_make_filter_follows_the_config(config: object, function: object) -> None:
    adv = torch.linspace(-3, 3, 13)
    torch.testing.assert_close(make_filter(config)(adv), function(adv))  # type: ignore[operator, arg-type]
