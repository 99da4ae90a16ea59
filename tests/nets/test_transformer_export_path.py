"""The Transformer's fixed-shape rollout step (what a traced or exported graph runs) equals its eager step."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from torch import nn

from amago_nets.kv_cache import KVCache
from amago_nets.specs import TransformerTrajEncoderConfig
from amago_nets.traj_transformer import TransformerTrajEncoder

# Tracing warns at every shape read and at σReparam's weight cache, and torch marks it deprecated; stepping the
# captured graph is the check.
pytestmark = [
    pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning"),
    pytest.mark.filterwarnings("ignore:`torch.jit.trace:FutureWarning"),
]

TINY_TRANSFORMER = {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}
ROWS, STEPS, TSTEP_DIM = 5, 30, 6
LONGEST_EPISODE = 14
"""Rows restart after 1..14 steps, except the last row, which runs all ``STEPS`` steps in one episode."""
WRAPS, NO_WRAP = 5, 40
"""Contexts: rows outgrow 5 slots and wrap around; 40 slots hold every episode."""
CACHE_FIELDS = ("keys", "values", "lengths", "envs", "rows")


def _encoder(context: int, pos_emb: str = "fixed", sigma_reparam: bool = True) -> TransformerTrajEncoder:
    torch.manual_seed(0)
    config = TransformerTrajEncoderConfig(**TINY_TRANSFORMER, pos_emb=pos_emb, sigma_reparam=sigma_reparam)
    return TransformerTrajEncoder(config, tstep_dim=TSTEP_DIM, max_seq_len=context).eval()


def _rollout_inputs(seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
    """``STEPS`` steps of inputs (STEPS, ROWS, 1, TSTEP_DIM) and each step's episode ends (STEPS, ROWS)."""
    rng = np.random.default_rng(seed)
    ends = np.zeros((STEPS, ROWS), dtype=bool)
    for row in range(ROWS - 1):
        step = -1
        while (step := step + int(rng.integers(1, LONGEST_EPISODE + 1))) < STEPS:
            ends[step, row] = True
    return torch.randn(STEPS, ROWS, 1, TSTEP_DIM, generator=torch.Generator().manual_seed(seed)), ends


def _new_cache(encoder: TransformerTrajEncoder, env_order: bool) -> KVCache:
    if not env_order:
        return encoder.init_hidden_state(ROWS, "cpu")
    with encoder.exportable_memory():
        return encoder.init_hidden_state(ROWS, "cpu")


def _assert_same_cache(got: KVCache, want: KVCache) -> None:
    for name in CACHE_FIELDS:
        torch.testing.assert_close(getattr(got, name), getattr(want, name), msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize("context", [WRAPS, NO_WRAP])
@pytest.mark.parametrize("env_order", [True, False], ids=["rows-in-env-order", "sorted-rows"])
@pytest.mark.parametrize("pos_emb", ["fixed", "rope"])
def test_fixed_shape_step_equals_the_eager_step(context: int, env_order: bool, pos_emb: str) -> None:
    encoder = _encoder(context, pos_emb)
    inputs, ends = _rollout_inputs()
    eager, fixed = _new_cache(encoder, env_order), _new_cache(encoder, env_order)
    time_idx = torch.zeros(ROWS, 1, dtype=torch.long)
    longest = 0
    with torch.no_grad():
        for step in range(STEPS):
            eager_out, eager = encoder(inputs[step], time_idx, eager)
            fixed_out, fixed = encoder.fixed_shape_step(inputs[step], time_idx, fixed)
            torch.testing.assert_close(fixed_out, eager_out)
            _assert_same_cache(fixed, eager)
            longest = max(longest, int(eager.lengths.max()))
            eager = encoder.reset_hidden_state(eager, ends[step])
            fixed = encoder.reset_hidden_state(fixed, ends[step])
            time_idx = torch.where(torch.as_tensor(ends[step])[:, None], 0, time_idx + 1)
    # Rows were at different lengths throughout, and wrapped around exactly when the context is the small one.
    assert (longest > context) == (context == WRAPS)


class _CacheStep(nn.Module):
    """The encoder's rollout step with the cache as plain tensors in and out (what an exporter captures)."""

    def __init__(self, encoder: TransformerTrajEncoder, template: KVCache) -> None:
        super().__init__()
        self.encoder = encoder
        self.template = template

    def forward(
        self, seq: torch.Tensor, time_idx: torch.Tensor, *cache: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        state = replace(self.template, **dict(zip(CACHE_FIELDS, cache, strict=True)))
        out, after = self.encoder(seq, time_idx, state)
        return (out, *(getattr(after, name) for name in CACHE_FIELDS))


def _capture(capture: str, step: _CacheStep, example: tuple[torch.Tensor, ...]) -> nn.Module:
    if capture == "jit.trace":
        return torch.jit.trace(step, example, check_trace=False)
    return torch.export.export(step, example).module()


@pytest.mark.slow
@pytest.mark.parametrize("context", [WRAPS, NO_WRAP])
@pytest.mark.parametrize("env_order", [True, False], ids=["rows-in-env-order", "sorted-rows"])
@pytest.mark.parametrize("capture", ["jit.trace", "torch.export"])
def test_a_captured_step_follows_lengths_it_was_not_captured_at(
    context: int, env_order: bool, capture: str
) -> None:
    # torch.export cannot follow σReparam's no-grad weight cache (keyed by data pointers), so it is off here.
    encoder = _encoder(context, sigma_reparam=capture == "jit.trace")
    inputs, ends = _rollout_inputs(seed=1)
    eager = _new_cache(encoder, env_order)
    captured_cache = _new_cache(encoder, env_order)
    time_idx = torch.zeros(ROWS, 1, dtype=torch.long)
    fields = tuple(getattr(captured_cache, name) for name in CACHE_FIELDS)
    with torch.no_grad():
        # Captured once, at a fresh cache (every row at length 0), then stepped through every length.
        captured = _capture(capture, _CacheStep(encoder, captured_cache), (inputs[0], time_idx, *fields))
        for step in range(STEPS):
            eager_out, eager = encoder(inputs[step], time_idx, eager)
            out, *fields_after = captured(inputs[step], time_idx, *fields)
            torch.testing.assert_close(out, eager_out)
            after = replace(captured_cache, **dict(zip(CACHE_FIELDS, fields_after, strict=True)))
            _assert_same_cache(after, eager)
            eager = encoder.reset_hidden_state(eager, ends[step])
            captured_cache = encoder.reset_hidden_state(after, ends[step])
            fields = tuple(getattr(captured_cache, name) for name in CACHE_FIELDS)
            time_idx = torch.where(torch.as_tensor(ends[step])[:, None], 0, time_idx + 1)


@pytest.mark.parametrize("env_order", [True, False], ids=["rows-in-env-order", "sorted-rows"])
def test_a_reset_leaves_restarted_envs_a_zeroed_row(env_order: bool) -> None:
    encoder = _encoder(WRAPS)
    cache = _new_cache(encoder, env_order)
    inputs, _ = _rollout_inputs()
    with torch.no_grad():
        for step in range(7):  # past the context: every slot of every row holds a step
            _, cache = encoder(inputs[step], torch.full((ROWS, 1), step), cache)
    before = cache.keys.clone()
    done = np.array([False, True, False, True, False])
    cache = encoder.reset_hidden_state(cache, done)
    restarted = cache.rows[torch.as_tensor(done)]
    for storage in (cache.keys, cache.values):
        assert not storage[:, restarted].any()
        assert storage[:, cache.rows[torch.as_tensor(~done)]].all()
    if env_order:
        kept = torch.as_tensor(~done)
        assert torch.equal(cache.keys[:, kept], before[:, kept])
    assert cache.lengths.tolist() == [7, 0, 7, 0, 7]


def test_exportable_memory_keeps_rows_in_env_order_only_while_open() -> None:
    encoder = _encoder(WRAPS)
    assert encoder.init_hidden_state(ROWS, "cpu").sort_rows
    inside = []

    def export_that_fails() -> None:
        with encoder.exportable_memory():
            inside.append(encoder.init_hidden_state(ROWS, "cpu").sort_rows)
            raise RuntimeError

    with pytest.raises(RuntimeError):
        export_that_fails()
    assert inside == [False]
    assert encoder.init_hidden_state(ROWS, "cpu").sort_rows
