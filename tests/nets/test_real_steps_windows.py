"""Encoders given a window's pad_mask skip the padding and give the padded computation's real outputs."""

from __future__ import annotations

import itertools

import pytest
import torch

from amago_core.plugins import registries

torch.set_num_threads(1)
NO_DROPOUT = {"dropout_ff": 0.0, "dropout_emb": 0.0}


@pytest.mark.parametrize(
    "config",
    [
        {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2, **NO_DROPOUT},
        {"kind": "transformer", "d_model": 16, "n_heads": 4, "d_ff": 32, "pos_emb": "rope", **NO_DROPOUT},
        # Windows longer than the context: the sliding-window mask path.
        {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "window_size": 3, **NO_DROPOUT},
        {"kind": "ff", "d_model": 16, "n_layers": 2},
        {"kind": "rnn", "d_hidden": 16, "d_output": 16, "n_layers": 2},
    ],
)
def test_padded_steps_are_skipped_exactly(config: dict) -> None:
    torch.manual_seed(0)
    encoder = registries().traj_encoders.builder(config)(tstep_dim=6, max_seq_len=9)
    seq = torch.randn(4, 9, 6, requires_grad=True)
    time_idxs = torch.arange(9).expand(4, 9) + torch.tensor([[0], [3], [0], [7]])
    pad_mask = torch.zeros(4, 9, dtype=torch.bool)
    pad_mask[0, 5:] = True
    pad_mask[2, 1:] = True
    real = ~pad_mask
    padded, _ = encoder(seq, time_idxs, None)
    (padded[real] ** 2).sum().backward()
    padded_grads = [p.grad.clone() for p in encoder.parameters()]
    padded_seq_grad = seq.grad.clone()
    encoder.zero_grad()
    seq.grad = None
    skipped, _ = encoder(seq, time_idxs, None, pad_mask=pad_mask)
    torch.testing.assert_close(skipped[real], padded[real], rtol=1e-5, atol=1e-6)
    assert torch.equal(skipped[pad_mask], torch.zeros_like(skipped[pad_mask]))  # padding costs nothing
    (skipped[real] ** 2).sum().backward()
    # Summation order differs (N real rows vs B * L rows with zeros); gradients whose terms nearly cancel keep
    # an absolute rounding error of the terms' size, so tolerances are relative to the largest gradient.
    grads = [p.grad for p in encoder.parameters()]
    scale = max(float(g.norm()) for g in padded_grads)
    for grad, padded_grad in zip([*grads, seq.grad], [*padded_grads, padded_seq_grad], strict=True):
        torch.testing.assert_close(grad, padded_grad, rtol=1e-4, atol=1e-6 * scale)


def test_gru_stretches_drop_rows_as_they_end() -> None:
    from amago_nets.traj_rnn import length_stretches

    lengths = [9, 9, 7, 5, 4, 2, 2, 1]  # sorted longest first
    stretches = length_stretches(lengths, max_stretches=4)
    assert stretches[0][0] == 0
    assert stretches[-1][1] == 9
    for (_, stop, _), (start, _, _) in itertools.pairwise(stretches):
        assert stop == start  # contiguous
    for start, _, running in stretches:
        assert running == sum(n > start for n in lengths)  # exactly the rows still real
    assert length_stretches([5, 5, 5]) == [(0, 5, 3)]
