"""The ``gtrxl`` memory keeps amago's contract, computes the paper's layer, and its memory is bounded.

Reference: "Stabilizing Transformers for Reinforcement Learning" (Parisotto et al., ICML 2020), with
Transformer-XL's relative attention. The naive reference below attends position by position over the keys at
most ``memory_len`` steps back and writes the GRU gate out from its equations, sharing only the encoder's
weights, so a wrong band, relative index or gate in the parallel forward shows.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from pydantic import ValidationError

from amago_core.testing.nets_checks import check_traj_encoder
from amago_memories.gtrxl.specs import GTRXL_SPEC, GTrXLConfig

SMALL: dict[str, Any] = {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}


def test_passes_amagos_trajectory_encoder_check() -> None:
    check_traj_encoder(GTRXL_SPEC, SMALL)


def test_passes_with_defaults() -> None:
    check_traj_encoder(GTRXL_SPEC, None)


@pytest.mark.parametrize("memory_len", [0, 3])
def test_passes_with_a_memory_shorter_than_the_window(memory_len: int) -> None:
    check_traj_encoder(GTRXL_SPEC, {**SMALL, "memory_len": memory_len, "time_embedding": True})


def reference_sinusoid(positions: Any, dim: int) -> Any:
    """Sines then cosines of ``position / 10000^(i / (dim / 2))``, float64."""
    half = dim // 2
    freqs = 10_000.0 ** (-torch.arange(half, dtype=torch.float64) / half)
    angles = positions.to(torch.float64)[..., None] * freqs
    return torch.cat([angles.sin(), angles.cos()], -1)


def naive_attention(attention: Any, h: Any, memory_len: int) -> Any:
    """Transformer-XL relative attention of one row ``h`` (L, d), one query and head at a time."""
    length, d_model = h.shape
    heads = attention.n_heads
    d_head = d_model // heads
    q, k, v = (part.reshape(length, heads, d_head) for part in attention.qkv(h).chunk(3, dim=-1))
    rel = attention.position(reference_sinusoid(torch.arange(memory_len + 1), d_model))
    rel = rel.reshape(memory_len + 1, heads, d_head)
    u, w = attention.content_bias, attention.position_bias
    out = torch.zeros(length, heads, d_head, dtype=h.dtype)
    for i in range(length):
        for head in range(heads):
            keys = range(max(0, i - memory_len), i + 1)
            scores = torch.stack(
                [
                    ((q[i, head] + u[head]) @ k[j, head] + (q[i, head] + w[head]) @ rel[i - j, head])
                    / math.sqrt(d_head)
                    for j in keys
                ]
            )
            weights = torch.softmax(scores, 0)
            out[i, head] = sum(weight * v[j, head] for weight, j in zip(weights, keys, strict=True))
    return attention.out(out.reshape(length, d_model))


def naive_gate(gate: Any, x: Any, y: Any) -> Any:
    """The paper's GRU-type gating layer, from its equations."""
    w_r, w_z, w_g = gate.from_y.weight.chunk(3, 0)
    b_r, b_z, b_g = gate.from_y.bias.chunk(3, 0)
    u_r, u_z = gate.from_x.weight.chunk(2, 0)
    u_g = gate.candidate_x.weight
    r = torch.sigmoid(y @ w_r.T + b_r + x @ u_r.T)
    z = torch.sigmoid(y @ w_z.T + b_z + x @ u_z.T - gate.gate_bias)
    h = torch.tanh(y @ w_g.T + b_g + (r * x) @ u_g.T)
    return (1 - z) * x + z * h


def naive_forward(encoder: Any, seq: Any, memory_len: int) -> Any:
    """The encoder's forward over each row (no time embedding), position by position."""
    rows = []
    for row in seq:
        x = encoder.inp(row)
        for block in encoder.blocks:
            attended = naive_attention(block.attention, block.norm_attention(x), memory_len)
            x = naive_gate(block.gate_attention, x, torch.relu(attended))
            x = naive_gate(block.gate_ff, x, torch.relu(block.ff(block.norm_ff(x))))
        rows.append(encoder.out_norm(x))
    return torch.stack(rows)


@pytest.mark.parametrize("memory_len", [None, 3])
def test_parallel_forward_equals_naive_attention(memory_len: int | None) -> None:
    torch.manual_seed(1)
    encoder = (
        GTRXL_SPEC.build({**SMALL, "memory_len": memory_len}, tstep_dim=5, max_seq_len=6).double().eval()
    )
    with torch.no_grad():
        for block in encoder.blocks:  # u and v start at zero; random ones check that they enter
            block.attention.content_bias.normal_()
            block.attention.position_bias.normal_()
        seq = torch.randn(2, 11, 5, dtype=torch.float64)  # longer than memory_len + 1: the band slides
        parallel, state = encoder(seq, torch.arange(11)[None].repeat(2, 1), None)
        naive = naive_forward(encoder, seq, encoder.memory_len)
    assert state is None
    assert encoder.memory_len == (5 if memory_len is None else memory_len)
    assert (parallel - naive).abs().max() < 1e-5


def test_memory_is_bounded() -> None:
    """Step 0 reaches the outputs up to step n_layers * memory_len and none after."""
    torch.manual_seed(3)
    n_layers, memory_len = 2, 3
    encoder = GTRXL_SPEC.build(
        {**SMALL, "n_layers": n_layers, "memory_len": memory_len}, tstep_dim=5, max_seq_len=20
    ).eval()
    seq = torch.randn(2, 12, 5)
    changed = seq.clone()
    changed[:, 0] += 3.0
    time_idxs = torch.arange(12)[None].repeat(2, 1)
    with torch.no_grad():
        before, _ = encoder(seq, time_idxs, None)
        after, _ = encoder(changed, time_idxs, None)
    reach = n_layers * memory_len
    assert torch.allclose(before[:, reach + 1 :], after[:, reach + 1 :], atol=1e-6)
    assert (before[:, reach] - after[:, reach]).abs().max() > 1e-4


def test_memory_continues_over_chunks() -> None:
    """A rollout fed in chunks (``L > 1`` with a state) gives the window's outputs."""
    torch.manual_seed(2)
    encoder = GTRXL_SPEC.build({**SMALL, "memory_len": 3}, tstep_dim=5, max_seq_len=6).double().eval()
    seq = torch.randn(3, 10, 5, dtype=torch.float64)
    time_idxs = torch.arange(10)[None].repeat(3, 1)
    with torch.no_grad():
        whole, _ = encoder(seq, time_idxs, None)
        state = encoder.init_hidden_state(3, "cpu")
        first, state = encoder(seq[:, :2], time_idxs[:, :2], state)
        step, state = encoder(seq[:, 2:3], time_idxs[:, 2:3], state)
        rest, _ = encoder(seq[:, 3:], time_idxs[:, 3:], state)
    assert (torch.cat([first, step, rest], 1) - whole).abs().max() < 1e-10


def test_rollout_state_keeps_its_size() -> None:
    encoder = GTRXL_SPEC.build({**SMALL, "memory_len": 3}, tstep_dim=5, max_seq_len=6).eval()
    state = encoder.init_hidden_state(2, "cpu")
    shapes = []
    with torch.no_grad():
        for t in range(50):
            _, state = encoder(torch.randn(2, 1, 5), torch.full((2, 1), t), state)
            if t in (0, 49):
                shapes.append([tuple(part.shape) for part in state])
    assert shapes[0] == shapes[1]
    assert state.filled.tolist() == [3, 3]


def test_bad_heads_say_what_to_change() -> None:
    with pytest.raises(ValidationError, match="must divide d_model"):
        GTrXLConfig(d_model=10, n_heads=4)
