"""amago-memories' shared parallel scan equals the recurrence it replaces, for real and complex states."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from amago_memories.scan import linear_scan, reset_rows  # noqa: E402


def _loop(a, b, h0):
    h, states = h0, []
    for t in range(a.shape[1]):
        h = a[:, t] * h + b[:, t]
        states.append(h)
    return torch.stack(states, dim=1)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("length", [1, 2, 7, 64, 129])
def test_the_scan_equals_the_step_by_step_recurrence(dtype, length) -> None:
    gen = torch.Generator().manual_seed(length)
    a = torch.rand(3, length, 4, generator=gen, dtype=torch.float64).to(dtype)
    b = torch.randn(3, length, 4, generator=gen, dtype=torch.float64).to(dtype)
    h0 = torch.randn(3, 4, generator=gen, dtype=torch.float64).to(dtype)
    assert torch.allclose(linear_scan(a, b, h0), _loop(a, b, h0), atol=1e-12)
    assert torch.allclose(linear_scan(a, b), _loop(a, b, torch.zeros_like(h0)), atol=1e-12)


def test_a_zero_decay_forgets_everything_before_it() -> None:
    a, b = torch.ones(1, 6, 1), torch.ones(1, 6, 1)
    a[0, 3] = 0.0
    assert linear_scan(a, b).flatten().tolist() == [1, 2, 3, 1, 2, 3]


def test_gradients_flow_through_the_scan_as_through_the_loop() -> None:
    a = torch.rand(2, 9, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, 9, 3, dtype=torch.float64, requires_grad=True)
    grads = [
        torch.autograd.grad(fn(a, b, torch.zeros(2, 3, dtype=torch.float64)).sum(), (a, b))
        for fn in (linear_scan, _loop)
    ]
    for scanned, looped in zip(*grads, strict=True):
        assert torch.allclose(scanned, looped, atol=1e-12)


@pytest.mark.parametrize("as_tensor", [False, True])
def test_reset_rows_zeroes_only_the_done_rows(as_tensor) -> None:
    state = torch.ones(4, 2, 3)
    dones = np.array([False, True, False, True])
    out = reset_rows(state, torch.as_tensor(dones) if as_tensor else dones)
    assert out[[0, 2]].eq(1).all()
    assert out[[1, 3]].eq(0).all()
