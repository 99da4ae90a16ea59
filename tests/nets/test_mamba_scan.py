"""The pure-PyTorch selective scan: every form computes the same recurrence."""

from __future__ import annotations

import pytest
import torch

from amago_nets import specs
from amago_nets.selective_scan import scan_chunked, scan_sequential, scan_step
from amago_nets.traj_mamba import MambaTrajEncoder


def _scan_inputs(
    batch: int = 2, length: int = 13, d_inner: int = 5, d_state: int = 3
) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    x = torch.randn(batch, length, d_inner)
    dt = torch.nn.functional.softplus(torch.randn(batch, length, d_inner))
    A = -torch.rand(d_inner, d_state) * 4
    B, C = torch.randn(batch, length, d_state), torch.randn(batch, length, d_state)
    D = torch.randn(d_inner)
    h0 = torch.randn(batch, d_inner, d_state)
    return x, dt, A, B, C, D, h0


@pytest.mark.parametrize("chunk_size", [1, 2, 4, 5, 13, 64])
def test_chunked_scan_equals_the_loop(chunk_size: int) -> None:
    x, dt, A, B, C, D, h0 = _scan_inputs()
    y_ref, h_ref = scan_sequential(x, dt, A, B, C, D, h0)
    y, h = scan_chunked(x, dt, A, B, C, D, h0, chunk_size=chunk_size)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(h, h_ref, atol=1e-5, rtol=1e-5)


def test_step_equals_the_loop() -> None:
    x, dt, A, B, C, D, h0 = _scan_inputs()
    y_ref, _ = scan_sequential(x, dt, A, B, C, D, h0)
    h = h0
    for t in range(x.shape[1]):
        y_t, h = scan_step(x[:, t], dt[:, t], A, B[:, t], C[:, t], D, h)
        torch.testing.assert_close(y_t, y_ref[:, t], atol=1e-5, rtol=1e-5)


def test_chunked_scan_gradients_match_the_loop() -> None:
    x, dt, A, B, C, D, h0 = _scan_inputs()
    x.requires_grad_(True)
    scan_sequential(x, dt, A, B, C, D, h0)[0].square().sum().backward()
    grad_ref = x.grad.clone()
    x.grad = None
    scan_chunked(x, dt, A, B, C, D, h0, chunk_size=4)[0].square().sum().backward()
    torch.testing.assert_close(x.grad, grad_ref, atol=1e-4, rtol=1e-4)


def test_feeding_a_sequence_in_pieces_with_state_equals_one_pass() -> None:
    torch.manual_seed(0)
    encoder = MambaTrajEncoder(
        specs.MambaTrajEncoderConfig(d_model=8, d_state=4, n_layers=2), tstep_dim=3, max_seq_len=8
    )
    encoder.eval()
    seq, times = torch.randn(2, 11, 3), torch.arange(11).expand(2, -1)
    whole, _ = encoder(seq, times, None)
    first, state = encoder(seq[:, :4], times[:, :4], None)
    second, state = encoder(seq[:, 4:9], times[:, 4:9], state)
    third, _ = encoder(seq[:, 9:], times[:, 9:], state)
    torch.testing.assert_close(torch.cat((first, second, third), dim=1), whole, atol=1e-5, rtol=1e-5)
