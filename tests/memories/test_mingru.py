"""The ``mingru`` memory keeps amago's contract and computes the paper's minGRU."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from amago_core.testing.nets_checks import check_traj_encoder
from amago_memories.mingru.encoder import MinGRUTrajEncoder
from amago_memories.mingru.specs import MINGRU_SPEC

SMALL = {"d_model": 16, "n_layers": 2, "expansion": 1.5}


def _build(config: dict[str, object], tstep_dim: int = 5) -> MinGRUTrajEncoder:
    torch.manual_seed(0)
    encoder = MINGRU_SPEC.build(config, tstep_dim=tstep_dim, max_seq_len=8)
    assert isinstance(encoder, MinGRUTrajEncoder)
    return encoder.eval()


def _naive_forward(encoder: MinGRUTrajEncoder, seq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The deep minGRU with each layer's recurrence stepped in a Python loop, from the paper's equations."""
    x = encoder.inp(seq)
    last_states = []
    for block in encoder.blocks:
        inputs = block.norm_rnn(x)
        h = torch.zeros(seq.shape[0], encoder.config.d_hidden, dtype=seq.dtype)
        states = []
        for t in range(seq.shape[1]):
            gate_pre, cand_pre = block.rnn.to_gates(inputs[:, t]).chunk(2, dim=-1)
            z = torch.sigmoid(gate_pre)
            h_tilde = torch.where(cand_pre >= 0, cand_pre + 0.5, torch.sigmoid(cand_pre))
            h = (1 - z) * h + z * h_tilde
            states.append(h)
        x = x + block.rnn_out(torch.stack(states, dim=1))
        x = x + block.mlp(block.norm_mlp(x))
        last_states.append(h)
    return encoder.out_norm(x), torch.stack(last_states, dim=1)


def test_passes_amagos_trajectory_encoder_check() -> None:
    check_traj_encoder(MINGRU_SPEC, SMALL)


def test_passes_with_defaults() -> None:
    check_traj_encoder(MINGRU_SPEC, None)


def test_parallel_forward_equals_the_papers_recurrence_in_float64() -> None:
    encoder = _build(SMALL).double()
    seq = 2 * torch.randn(3, 37, 5, dtype=torch.float64)
    with torch.no_grad():
        out, state = encoder(seq, torch.arange(37).expand(3, 37), None)
        reference, reference_state = _naive_forward(encoder, seq)
    torch.testing.assert_close(out, reference, rtol=0, atol=1e-5)
    torch.testing.assert_close(state, reference_state, rtol=0, atol=1e-5)


def test_rollout_steps_equal_the_training_forward_over_long_windows_in_fp32() -> None:
    encoder = _build(SMALL)
    length = 150
    seq, times = torch.randn(2, length, 5), torch.arange(length).expand(2, length)
    with torch.no_grad():
        full, _ = encoder(seq, times, None)
        hidden, outs = encoder.init_hidden_state(2, "cpu"), []
        for t in range(length):
            out, hidden = encoder(seq[:, t : t + 1], times[:, t : t + 1], hidden)
            outs.append(out)
    torch.testing.assert_close(torch.cat(outs, dim=1), full, rtol=0, atol=1e-4)


def test_rollout_state_does_not_grow() -> None:
    encoder = _build(SMALL)
    hidden = encoder.init_hidden_state(2, "cpu")
    shapes = []
    with torch.no_grad():
        for step in range(50):
            _, hidden = encoder(torch.randn(2, 1, 5), torch.full((2, 1), step), hidden)
            if step in (0, 49):
                shapes.append(tuple(hidden.shape))
    assert shapes[0] == shapes[1] == (2, 2, 24)


def test_reset_empties_only_the_done_rows() -> None:
    encoder = _build(SMALL)
    with torch.no_grad():
        _, hidden = encoder(torch.randn(3, 4, 5), torch.arange(4).expand(3, 4), None)
    reset = encoder.reset_hidden_state(hidden, torch.tensor([False, True, False]))
    assert reset is not None
    assert torch.equal(reset[1], encoder.init_hidden_state(3, "cpu")[1])
    assert torch.equal(reset[[0, 2]], hidden[[0, 2]])


def test_an_expansion_that_rounds_to_no_state_is_refused() -> None:
    with pytest.raises(ValidationError, match="raise expansion or d_model"):
        MINGRU_SPEC.config(d_model=4, expansion=0.1)


def test_a_window_continued_from_the_returned_state_equals_one_window() -> None:
    encoder = _build(SMALL)
    seq, times = torch.randn(2, 25, 5), torch.arange(25).expand(2, 25)
    with torch.no_grad():
        whole, _ = encoder(seq, times, None)
        first, state = encoder(seq[:, :10], times[:, :10], None)
        second, _ = encoder(seq[:, 10:], times[:, 10:], state)
    torch.testing.assert_close(torch.cat([first, second], dim=1), whole, rtol=0, atol=1e-5)
