"""The ``mlstm`` memory keeps amago's contract and computes the paper's mLSTM in both of its forms."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from amago_core.testing.nets_checks import check_traj_encoder
from amago_memories.mlstm.encoder import MLSTMTrajEncoder, mlstm_parallel, mlstm_step
from amago_memories.mlstm.specs import MLSTM_SPEC

SMALL = {"d_model": 16, "n_heads": 2, "n_layers": 2}


def _build(config: dict[str, object], tstep_dim: int = 5) -> MLSTMTrajEncoder:
    torch.manual_seed(0)
    encoder = MLSTM_SPEC.build(config, tstep_dim=tstep_dim, max_seq_len=8)
    assert isinstance(encoder, MLSTMTrajEncoder)
    with torch.no_grad():  # input-dependent gates (they start input-independent), so the tests see them act
        for block in encoder.blocks:
            block.gates.weight.normal_(std=0.3)
    return encoder.eval()


def _naive_cell(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, i_pre: torch.Tensor, log_f: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The paper's unstabilised recurrence, stepped in a loop: h~ (B, H, L, d) and the last (C, n)."""
    batch, heads, length, dim = q.shape
    c = torch.zeros(batch, heads, dim, dim, dtype=q.dtype)
    n = torch.zeros(batch, heads, dim, dtype=q.dtype)
    outs = []
    for t in range(length):
        f, i = torch.exp(log_f[..., t]), torch.exp(i_pre[..., t])
        qt, kt, vt = q[:, :, t], k[:, :, t], v[:, :, t]
        c = f[..., None, None] * c + i[..., None, None] * torch.einsum("bhe,bhd->bhed", vt, kt)
        n = f[..., None] * n + i[..., None] * kt
        den = torch.clamp((n * qt).sum(-1).abs(), min=1.0)
        outs.append(torch.einsum("bhed,bhd->bhe", c, qt) / den[..., None])
    return torch.stack(outs, dim=2), c, n


def _cell_inputs(
    length: int, gate_scale: float = 1.0, dtype: torch.dtype = torch.float64, exp_forget: bool = False
) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(1)
    batch, heads, dim = 2, 3, 4
    q, k, v = (torch.randn(batch, heads, length, dim, generator=gen, dtype=dtype) for _ in range(3))
    i_pre = gate_scale * torch.randn(batch, heads, length, generator=gen, dtype=dtype)
    f_pre = gate_scale * torch.randn(batch, heads, length, generator=gen, dtype=dtype) + 2.0
    log_f = f_pre if exp_forget else torch.nn.functional.logsigmoid(f_pre)
    return q, k / dim**0.5, v, i_pre, log_f


def _fresh_cell_state(batch: int, heads: int, dim: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """Layer 0's (C', n', m) of the encoder's own init_hidden_state, at the given sizes."""
    encoder = MLSTM_SPEC.build(
        {"d_model": heads * dim, "n_heads": heads, "proj_factor": 1, "n_layers": 1},
        tstep_dim=2,
        max_seq_len=4,
    )
    return tuple(s[:, 0].to(dtype) for s in encoder.init_hidden_state(batch, "cpu")[:3])


def _step_through(inputs: tuple[torch.Tensor, ...], state: tuple[torch.Tensor, ...]) -> torch.Tensor:
    q, k, v, i_pre, log_f = inputs
    outs = []
    for t in range(q.shape[2]):
        h, state = mlstm_step(q[:, :, t], k[:, :, t], v[:, :, t], i_pre[..., t], log_f[..., t], state)
        outs.append(h)
    return torch.stack(outs, dim=2)


def test_passes_amagos_trajectory_encoder_check() -> None:
    check_traj_encoder(MLSTM_SPEC, SMALL)


def test_passes_with_an_exp_forget_gate_and_no_conv() -> None:
    check_traj_encoder(MLSTM_SPEC, {**SMALL, "forget_gate": "exp", "conv_kernel": 0})


def test_passes_with_defaults() -> None:
    check_traj_encoder(MLSTM_SPEC, None)


@pytest.mark.parametrize("exp_forget", [False, True])
def test_both_cell_forms_equal_the_papers_unstabilised_recurrence(exp_forget: bool) -> None:
    inputs = _cell_inputs(29, exp_forget=exp_forget)
    reference, c_ref, n_ref = _naive_cell(*inputs)
    parallel, (c, n, m) = mlstm_parallel(*inputs)
    torch.testing.assert_close(parallel, reference, rtol=1e-7, atol=1e-9)
    # The carried state is the paper's (C, n) divided by exp(m).
    torch.testing.assert_close(c * m.exp()[..., None, None], c_ref, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(n * m.exp()[..., None], n_ref, rtol=1e-7, atol=1e-9)
    # The rollout form from the encoder's fresh state (m = -inf) is the same function.
    stepped = _step_through(inputs, _fresh_cell_state(2, 3, 4, torch.float64))
    torch.testing.assert_close(stepped, reference, rtol=1e-7, atol=1e-9)


def test_parallel_form_continues_from_a_carried_state() -> None:
    inputs = _cell_inputs(30)
    whole, (c_whole, _, m_whole) = mlstm_parallel(*inputs)
    first, state = mlstm_parallel(*(t[..., :12] if t.dim() == 3 else t[:, :, :12] for t in inputs))
    second, (c_end, _, m_end) = mlstm_parallel(
        *(t[..., 12:] if t.dim() == 3 else t[:, :, 12:] for t in inputs), state=state
    )
    torch.testing.assert_close(torch.cat([first, second], dim=2), whole, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(c_end * (m_end - m_whole).exp()[..., None, None], c_whole)


def test_parallel_training_forward_equals_the_recurrence_stepped_in_float64() -> None:
    encoder = _build(SMALL).double()
    seq = torch.randn(3, 23, 5, dtype=torch.float64)
    with torch.no_grad():
        out, _ = encoder(seq, torch.arange(23).expand(3, 23), None)
        x = encoder.inp(seq)
        for block in encoder.blocks:
            inputs, _ = block.features(block.norm(x), None)
            h, _, _ = _naive_cell(inputs.q, inputs.k, inputs.v, inputs.i_pre, inputs.log_f)
            x = x + block.readout(h, inputs)
        reference = encoder.out_norm(x)
    torch.testing.assert_close(out, reference, rtol=0, atol=1e-5)


@pytest.mark.parametrize("config", [SMALL, {**SMALL, "forget_gate": "exp", "conv_kernel": 0}])
def test_rollout_steps_equal_the_training_forward_over_long_windows_in_fp32(
    config: dict[str, object],
) -> None:
    encoder = _build(config)
    length = 130
    seq, times = torch.randn(2, length, 5), torch.arange(length).expand(2, length)
    with torch.no_grad():
        full, _ = encoder(seq, times, None)
        hidden, outs = encoder.init_hidden_state(2, "cpu"), []
        for t in range(length):
            out, hidden = encoder(seq[:, t : t + 1], times[:, t : t + 1], hidden)
            outs.append(out)
    torch.testing.assert_close(torch.cat(outs, dim=1), full, rtol=0, atol=1e-4)


@pytest.mark.parametrize("exp_forget", [False, True])
def test_large_gate_preactivations_stay_finite_in_both_forms(exp_forget: bool) -> None:
    inputs = _cell_inputs(40, gate_scale=50.0, dtype=torch.float32, exp_forget=exp_forget)
    # Unstabilised, these gates overflow fp32: the test is about the stabiliser.
    assert not torch.isfinite(inputs[3].exp()).all()
    parallel, state = mlstm_parallel(*inputs)
    stepped = _step_through(inputs, _fresh_cell_state(2, 3, 4, torch.float32))
    assert torch.isfinite(parallel).all()
    assert all(torch.isfinite(s).all() for s in state)
    assert torch.isfinite(stepped).all()
    torch.testing.assert_close(stepped, parallel, rtol=1e-4, atol=1e-4)


def test_large_inputs_and_gate_weights_stay_finite_through_the_encoder() -> None:
    encoder = _build(SMALL)
    with torch.no_grad():
        for block in encoder.blocks:
            block.gates.weight.mul_(50.0)
            block.gates.bias.mul_(50.0)
    seq, times = 50 * torch.randn(2, 20, 5), torch.arange(20).expand(2, 20)
    with torch.no_grad():
        full, _ = encoder(seq, times, None)
        hidden, outs = encoder.init_hidden_state(2, "cpu"), []
        for t in range(20):
            out, hidden = encoder(seq[:, t : t + 1], times[:, t : t + 1], hidden)
            outs.append(out)
    assert torch.isfinite(full).all()
    torch.testing.assert_close(torch.cat(outs, dim=1), full, rtol=0, atol=1e-3)


def test_rollout_state_does_not_grow() -> None:
    encoder = _build(SMALL)
    hidden = encoder.init_hidden_state(2, "cpu")
    shapes = []
    with torch.no_grad():
        for step in range(50):
            _, hidden = encoder(torch.randn(2, 1, 5), torch.full((2, 1), step), hidden)
            if step in (0, 49):
                shapes.append([tuple(s.shape) for s in hidden])
    assert shapes[0] == shapes[1] == [(2, 2, 2, 16, 16), (2, 2, 2, 16), (2, 2, 2), (2, 2, 3, 32)]


@pytest.mark.parametrize("as_tensor", [False, True])
def test_reset_empties_only_the_done_rows(as_tensor: bool) -> None:
    encoder = _build(SMALL)
    with torch.no_grad():
        _, hidden = encoder(torch.randn(3, 4, 5), torch.arange(4).expand(3, 4), None)
    dones = [False, True, False]
    reset = encoder.reset_hidden_state(hidden, torch.tensor(dones) if as_tensor else dones)
    fresh = encoder.init_hidden_state(3, "cpu")
    assert reset is not None
    for after, before, empty in zip(reset, hidden, fresh, strict=True):
        assert torch.equal(after[1], empty[1])  # m: -inf, nothing stored
        assert torch.equal(after[[0, 2]], before[[0, 2]])


def test_heads_that_do_not_divide_d_model_are_refused() -> None:
    with pytest.raises(ValidationError, match="must divide d_model=20"):
        MLSTM_SPEC.config(d_model=20, n_heads=3)


def test_a_window_continued_from_the_returned_state_equals_one_window() -> None:
    encoder = _build(SMALL)
    seq, times = torch.randn(2, 25, 5), torch.arange(25).expand(2, 25)
    with torch.no_grad():
        whole, _ = encoder(seq, times, None)
        first, state = encoder(seq[:, :10], times[:, :10], None)
        second, _ = encoder(seq[:, 10:], times[:, 10:], state)
    torch.testing.assert_close(torch.cat([first, second], dim=1), whole, rtol=0, atol=1e-5)
