"""The ``linear_attention`` memory keeps amago's contract and computes the paper's recurrence.

Reference: "Transformers are RNNs" (Katharopoulos et al., ICML 2020); the decayed variant is RetNet's (Sun et
al. 2023). The naive reference below steps the paper's equations one timestep at a time, written here on its
own (it shares only the encoder's weights), so a wrong mask, decay or normaliser in the parallel form shows.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from pydantic import ValidationError

from amago_core.testing.nets_checks import check_traj_encoder
from amago_memories.linear_attention.specs import (
    LINEAR_ATTENTION_SPEC,
    LinearAttentionConfig,
    retnet_decays,
)

SMALL: dict[str, Any] = {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}


def test_passes_amagos_trajectory_encoder_check() -> None:
    check_traj_encoder(LINEAR_ATTENTION_SPEC, SMALL)


def test_passes_with_defaults() -> None:
    check_traj_encoder(LINEAR_ATTENTION_SPEC, None)


@pytest.mark.parametrize("decay", [0.9, "retnet", (0.5, 1.0)])
def test_passes_with_decay(decay: object) -> None:
    check_traj_encoder(LINEAR_ATTENTION_SPEC, {**SMALL, "decay": decay})


def reference_sinusoid(positions: Any, dim: int) -> Any:
    """Sines then cosines of ``position / 10000^(i / (dim / 2))``, float64."""
    half = dim // 2
    freqs = 10_000.0 ** (-torch.arange(half, dtype=torch.float64) / half)
    angles = positions.to(torch.float64)[..., None] * freqs
    return torch.cat([angles.sin(), angles.cos()], -1)


def naive_forward(encoder: Any, seq: Any, time_idxs: Any, gammas: list[float]) -> Any:
    """The encoder's training forward written as the paper's recurrence, one step, row and head at a time."""
    config = encoder.config
    heads, d_head = config.n_heads, config.d_model // config.n_heads
    phi = lambda x: torch.nn.functional.elu(x) + 1  # noqa: E731
    x = encoder.inp(seq)
    if config.time_embedding:
        x = x + reference_sinusoid(time_idxs, config.d_model)
    for block in encoder.blocks:
        attention = block.attention
        q, k, v = attention.qkv(block.norm_attention(x)).chunk(3, dim=-1)
        mixed = torch.zeros_like(q)
        for row in range(seq.shape[0]):
            for head in range(heads):
                cols = slice(head * d_head, (head + 1) * d_head)
                state = torch.zeros(d_head, d_head, dtype=seq.dtype)
                norm = torch.zeros(d_head, dtype=seq.dtype)
                for t in range(seq.shape[1]):
                    fk, fq = phi(k[row, t, cols]), phi(q[row, t, cols])
                    state = gammas[head] * state + torch.outer(fk, v[row, t, cols])
                    norm = gammas[head] * norm + fk
                    mixed[row, t, cols] = (fq @ state) / (fq @ norm + config.eps)
        x = x + attention.out(mixed)
        x = x + block.ff(block.norm_ff(x))
    return encoder.out_norm(x)


@pytest.mark.parametrize("decay", [None, 0.8, (0.6, 0.95)])
def test_parallel_forward_equals_the_papers_recurrence(decay: object) -> None:
    torch.manual_seed(1)
    config = LinearAttentionConfig(**SMALL, decay=decay)
    encoder = LINEAR_ATTENTION_SPEC.build(config, tstep_dim=5, max_seq_len=4).double().eval()
    seq = torch.randn(2, 11, 5, dtype=torch.float64)  # longer than max_seq_len: the form is exact for any L
    time_idxs = torch.arange(11)[None].repeat(2, 1) + torch.tensor([[0], [37]])
    gammas = list(config.head_decays() or (1.0,) * config.n_heads)
    with torch.no_grad():
        parallel, state = encoder(seq, time_idxs, None)
        naive = naive_forward(encoder, seq, time_idxs, gammas)
    assert state is None
    assert (parallel - naive).abs().max() < 1e-5


@pytest.mark.parametrize("decay", [None, "retnet"])
def test_state_continues_over_chunks(decay: object) -> None:
    """A rollout fed in chunks (``L > 1`` with a state) gives the window's outputs."""
    torch.manual_seed(2)
    encoder = LINEAR_ATTENTION_SPEC.build({**SMALL, "decay": decay}, tstep_dim=5, max_seq_len=4).double()
    seq = torch.randn(3, 9, 5, dtype=torch.float64)
    time_idxs = torch.arange(9)[None].repeat(3, 1)
    with torch.no_grad():
        whole, _ = encoder(seq, time_idxs, None)
        state = encoder.init_hidden_state(3, "cpu")
        first, state = encoder(seq[:, :4], time_idxs[:, :4], state)
        step, state = encoder(seq[:, 4:5], time_idxs[:, 4:5], state)
        rest, _ = encoder(seq[:, 5:], time_idxs[:, 5:], state)
    assert (torch.cat([first, step, rest], 1) - whole).abs().max() < 1e-10


def test_rollout_state_keeps_its_size() -> None:
    encoder = LINEAR_ATTENTION_SPEC.build(SMALL, tstep_dim=5, max_seq_len=4).eval()
    state = encoder.init_hidden_state(2, "cpu")
    shapes = []
    with torch.no_grad():
        for t in range(50):
            _, state = encoder(torch.randn(2, 1, 5), torch.full((2, 1), t), state)
            if t in (0, 49):
                shapes.append([tuple(part.shape) for part in state])
    assert shapes[0] == shapes[1]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"d_model": 10, "n_heads": 4}, "must divide d_model"),
        ({"n_heads": 4, "decay": (0.9, 0.9)}, "one decay per head"),
        ({"decay": 1.5}, r"in \(0, 1\]"),
        ({"decay": 0.0}, r"in \(0, 1\]"),
    ],
)
def test_bad_configs_say_what_to_change(options: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        LinearAttentionConfig(**options)


def test_retnet_decays_grow_towards_one() -> None:
    assert retnet_decays(3) == (1 - 2**-5, 1 - 2**-6, 1 - 2**-7)
    assert LinearAttentionConfig(n_heads=4, decay="retnet").head_decays() == retnet_decays(4)
