"""The ``ffm`` trajectory encoder keeps amago's contract and computes Fast and Forgetful Memory (Morad et al. 2023)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pydantic import ValidationError  # noqa: E402

from amago_core.testing.nets_checks import check_traj_encoder  # noqa: E402
from amago_memories.ffm.specs import FFM_SPEC, FFMConfig  # noqa: E402

SMALL = {"d_model": 8, "d_memory": 4, "d_context": 3, "n_layers": 2}
"""Small enough for milliseconds, with two layers so that the state of the second layer is exercised too."""


def _build(config: dict[str, object], tstep_dim: int = 5) -> torch.nn.Module:
    return FFM_SPEC.build(config, tstep_dim=tstep_dim, max_seq_len=7)


def _naive_ffm(
    encoder: torch.nn.Module, seq: torch.Tensor, h0: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The paper's equations, one step at a time, from the encoder's parameters (not its code)."""
    x, finals = seq, []
    for layer, cell in enumerate(encoder.cells):
        m, d = cell.d_memory, cell.d_output
        w, b = cell.pre.weight, cell.pre.bias
        l1, l2 = (w[:m], b[:m]), (w[m : 2 * m], b[m : 2 * m])
        l4, l5 = (w[2 * m : 2 * m + d], b[2 * m : 2 * m + d]), (w[2 * m + d :], b[2 * m + d :])
        gamma = torch.exp(-cell.alpha.abs())[:, None] * torch.exp(1j * cell.omega)[None, :]
        state, ys = h0[:, layer].clone(), []
        for t in range(x.shape[1]):
            xt = x[:, t]
            x_tilde = (xt @ l1[0].T + l1[1]) * torch.sigmoid(xt @ l2[0].T + l2[1])
            state = gamma * state + x_tilde[:, :, None]
            flat = torch.cat([state.real, state.imag], dim=-1).reshape(len(xt), -1)
            z = flat @ cell.mix.weight.T + cell.mix.bias
            mean, var = z.mean(-1, keepdim=True), z.var(-1, unbiased=False, keepdim=True)
            normed = (z - mean) / torch.sqrt(var + cell.norm.eps) * cell.norm.weight + cell.norm.bias
            out_gate = torch.sigmoid(xt @ l4[0].T + l4[1])
            ys.append(normed * out_gate + (xt @ l5[0].T + l5[1]) * (1 - out_gate))
        x = torch.stack(ys, dim=1)
        finals.append(state)
    return x, torch.stack(finals, dim=1)


def test_passes_amagos_trajectory_encoder_check() -> None:
    check_traj_encoder(FFM_SPEC, SMALL)


def test_passes_with_defaults() -> None:
    check_traj_encoder(FFM_SPEC, None)


def test_parallel_forward_equals_the_papers_recurrence_step_by_step() -> None:
    torch.manual_seed(0)
    encoder = _build(SMALL).double()
    # Perturb the init so that every parameter matters (e.g. a negative alpha must decay via |alpha|).
    with torch.no_grad():
        for param in encoder.parameters():
            param.add_(0.3 * torch.randn_like(param))
    seq = torch.randn(3, 37, 5, dtype=torch.float64)
    time_idxs = torch.arange(37).expand(3, 37)
    shape = (3, SMALL["n_layers"], SMALL["d_memory"], SMALL["d_context"])
    h0 = torch.complex(torch.randn(shape, dtype=torch.float64), torch.randn(shape, dtype=torch.float64))

    with torch.no_grad():
        out, state = encoder(seq, time_idxs, h0)
        want_out, want_state = _naive_ffm(encoder, seq, h0)
        fresh, _ = encoder(seq, time_idxs, None)
        want_fresh, _ = _naive_ffm(encoder, seq, torch.zeros_like(h0))
    assert out.dtype == torch.float64
    assert not out.is_complex()
    torch.testing.assert_close(out, want_out, atol=1e-5, rtol=0)
    torch.testing.assert_close(state, want_state, atol=1e-5, rtol=0)
    torch.testing.assert_close(fresh, want_fresh, atol=1e-5, rtol=0)


def test_rollout_state_does_not_grow() -> None:
    encoder = _build(SMALL).eval()
    state = encoder.init_hidden_state(2, "cpu")
    shapes = []
    with torch.no_grad():
        for step in range(50):
            _, state = encoder(torch.randn(2, 1, 5), torch.full((2, 1), step), state)
            shapes.append(tuple(state.shape))
    assert shapes[0] == shapes[-1] == (2, SMALL["n_layers"], SMALL["d_memory"], SMALL["d_context"])


def test_runs_under_bf16_autocast() -> None:
    encoder = _build(SMALL)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, state = encoder(torch.randn(2, 9, 5), torch.arange(9).expand(2, 9), None)
    assert torch.isfinite(out).all()
    assert state.dtype == torch.complex64


def test_init_follows_the_paper() -> None:
    cell = _build({"d_memory": 3, "d_context": 2, "retention_horizon": 100.0, "max_period": 10.0}).cells[0]
    # An input's weight falls to `forgotten_at` (0.01) after horizons 1, 50.5 and 100 steps.
    torch.testing.assert_close(
        torch.exp(-cell.alpha.detach() * torch.tensor([1.0, 50.5, 100.0])), torch.full((3,), 0.01)
    )
    torch.testing.assert_close(cell.omega.detach(), 2 * torch.pi / torch.tensor([1.0, 10.0]))


def test_bad_periods_are_refused() -> None:
    with pytest.raises(ValidationError, match="min_period"):
        FFMConfig(min_period=8.0, max_period=4.0)
