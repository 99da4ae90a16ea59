"""The ``lru`` trajectory encoder keeps amago's contract and computes the deep LRU (Orvieto et al. 2023)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from pydantic import ValidationError  # noqa: E402

from amago_core.testing.nets_checks import check_traj_encoder  # noqa: E402
from amago_memories.lru.specs import LRU_SPEC, LRUConfig  # noqa: E402

SMALL = {"d_model": 8, "d_state": 6, "n_layers": 2}
"""Small enough for milliseconds, with two blocks so that the state of the second block is exercised too."""


def _build(config: dict[str, object], tstep_dim: int = 5) -> torch.nn.Module:
    return LRU_SPEC.build(config, tstep_dim=tstep_dim, max_seq_len=7)


def _layer_norm(x: torch.Tensor, norm: torch.nn.LayerNorm) -> torch.Tensor:
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def _naive_lru(
    encoder: torch.nn.Module, seq: torch.Tensor, h0: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The paper's deep LRU, one step at a time, from the encoder's parameters (not its code)."""
    x = seq @ encoder.inp.weight.T + encoder.inp.bias
    finals = []
    for layer, block in enumerate(encoder.blocks):
        lru = block.lru
        lam = torch.exp(-torch.exp(lru.nu_log) + 1j * torch.exp(lru.theta_log))
        b = torch.complex(lru.b_re, lru.b_im) * torch.exp(lru.gamma_log)[:, None]
        c = torch.complex(lru.c_re, lru.c_im)
        h, ys = h0[:, layer].clone(), []
        for t in range(x.shape[1]):
            u = _layer_norm(x[:, t], block.norm)
            h = lam * h + u.to(b.dtype) @ b.T
            y = (h @ c.T).real + lru.d * u
            y = torch.nn.functional.gelu(y) @ block.glu.weight.T + block.glu.bias
            value, gate = y.chunk(2, dim=-1)
            ys.append(x[:, t] + value * torch.sigmoid(gate))
        x = torch.stack(ys, dim=1)
        finals.append(h)
    return _layer_norm(x, encoder.out_norm), torch.stack(finals, dim=1)


def test_passes_amagos_trajectory_encoder_check() -> None:
    check_traj_encoder(LRU_SPEC, SMALL)


def test_passes_with_defaults() -> None:
    check_traj_encoder(LRU_SPEC, None)


def test_parallel_forward_equals_the_papers_recurrence_step_by_step() -> None:
    torch.manual_seed(0)
    encoder = _build(SMALL).double()
    with torch.no_grad():  # move the LayerNorms off their identity init, so that they count
        for param in encoder.parameters():
            if param.dim() == 1 and param.shape[0] == SMALL["d_model"]:
                param.add_(0.3 * torch.randn_like(param))
    seq = torch.randn(3, 37, 5, dtype=torch.float64)
    time_idxs = torch.arange(37).expand(3, 37)
    shape = (3, SMALL["n_layers"], SMALL["d_state"])
    h0 = torch.complex(torch.randn(shape, dtype=torch.float64), torch.randn(shape, dtype=torch.float64))

    with torch.no_grad():
        out, state = encoder(seq, time_idxs, h0)
        want_out, want_state = _naive_lru(encoder, seq, h0)
        fresh, _ = encoder(seq, time_idxs, None)
        want_fresh, _ = _naive_lru(encoder, seq, torch.zeros_like(h0))
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
    assert shapes[0] == shapes[-1] == (2, SMALL["n_layers"], SMALL["d_state"])


def test_runs_under_bf16_autocast() -> None:
    encoder = _build(SMALL)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, state = encoder(torch.randn(2, 9, 5), torch.arange(9).expand(2, 9), None)
    assert torch.isfinite(out).all()
    assert state.dtype == torch.complex64


def test_ring_initialisation() -> None:
    config = {"d_state": 512, "r_min": 0.5, "r_max": 0.99, "max_phase": 0.7}
    lru = _build(config).blocks[0].lru
    with torch.no_grad():
        lam = lru.eigenvalues(torch.float64)
        gamma = lru.gamma_log.double().exp()
    assert lam.abs().min() >= 0.5 - 1e-6
    assert lam.abs().max() <= 0.99 + 1e-6
    assert lam.angle().min() >= 0
    assert lam.angle().max() <= 0.7 + 1e-6
    torch.testing.assert_close(gamma, torch.sqrt(1 - lam.abs() ** 2), atol=1e-5, rtol=0)
    # Uniform on the ring by area: |lambda|^2 is uniform on [r_min^2, r_max^2], so its mean is the midpoint.
    assert math.isclose(float((lam.abs() ** 2).mean()), (0.25 + 0.99**2) / 2, abs_tol=0.03)


def test_bad_ring_is_refused() -> None:
    with pytest.raises(ValidationError, match="r_min"):
        LRUConfig(r_min=0.99, r_max=0.9)
    with pytest.raises(ValidationError):
        LRUConfig(r_max=1.0)
