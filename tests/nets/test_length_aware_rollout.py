"""The Transformer's length-aware rollout (sorted cache rows, attention per run of rows) equals the plain path."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from amago_core.testing.nets_checks import check_traj_encoder
from amago_nets import row_groups, specs
from amago_nets.attention import attend_cached
from amago_nets.kv_cache import KVCache
from amago_nets.row_groups import plan_row_groups
from amago_nets.traj_transformer import TransformerTrajEncoder

TINY_TRANSFORMER = {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}


def _masked_reference(q, key_cache, value_cache, valid):
    """One sdpa call over every row's whole cache with the invalid slots masked: the plain path."""
    mask = torch.arange(key_cache.shape[1])[None, :] < valid[:, None]
    out = F.scaled_dot_product_attention(
        q.transpose(1, 2),
        key_cache.transpose(1, 2),
        value_cache.transpose(1, 2),
        attn_mask=mask[:, None, None, :],
    )
    return out.transpose(1, 2)


@pytest.mark.parametrize("overhead", [0, 8, 256, None])
def test_grouped_cached_attention_equals_one_masked_call(overhead: int | None) -> None:
    torch.manual_seed(0)
    # Very different lengths in no particular order, including 1 and the full context.
    valid = torch.tensor([1, 40, 3, 40, 17, 2, 33, 40, 9, 1, 25, 38])
    batch, context = valid.shape[0], 40
    q = torch.randn(batch, 1, 2, 8)
    key_cache, value_cache = torch.randn(batch, context, 2, 8), torch.randn(batch, context, 2, 8)
    groups = plan_row_groups(valid, overhead=overhead)
    if overhead == 0:
        assert len(groups) > 1, "overhead 0 must split rows of different lengths"
    out = attend_cached(q, key_cache, value_cache, valid, backend="sdpa", groups=groups)
    torch.testing.assert_close(out, _masked_reference(q, key_cache, value_cache, valid))


@pytest.mark.parametrize("overhead", [0, 5, 100])
def test_plan_covers_every_row_and_reads_every_valid_slot(overhead: int) -> None:
    rng = np.random.default_rng(0)
    for batch in (1, 2, 7, 16, 40):
        valid = torch.as_tensor(rng.integers(1, 60, size=batch))
        groups = plan_row_groups(valid, overhead=overhead)
        assert groups[0].start == 0
        assert groups[-1].stop == batch
        for before, after in pairwise(groups):
            assert before.stop == after.start
        for group in groups:
            assert group.used == int(valid[group.start : group.stop].max())
            assert (group.mask is None) == bool((valid[group.start : group.stop] == group.used).all())


@pytest.mark.parametrize("heads_first", [False, True])
def test_sorted_rows_hold_the_same_steps_as_unsorted_rows(heads_first: bool) -> None:
    """After random resets, every env's valid slots hold the same keys whether rows are sorted or not."""
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    batch, context = 9, 6
    sorted_cache = KVCache.empty(1, batch, context, 2, 3, "cpu", sort_rows=True, heads_first=heads_first)
    plain = KVCache.empty(1, batch, context, 2, 3, "cpu", sort_rows=False)
    for _ in range(40):
        key, value = torch.randn(batch, 1, 2, 3), torch.randn(batch, 1, 2, 3)
        sorted_cache.write(0, sorted_cache.by_row(key), sorted_cache.by_row(value))
        plain.write(0, key, value)
        sorted_cache, plain = sorted_cache.advanced(), plain.advanced()
        dones = rng.random(batch) < 0.2
        sorted_cache, plain = sorted_cache.reset(dones), plain.reset(dones)
        assert torch.equal(sorted_cache.lengths, plain.lengths)
        row_lengths = sorted_cache.by_row(sorted_cache.lengths)
        assert bool((row_lengths[:-1] >= row_lengths[1:]).all()), "rows must stay sorted longest first"
        assert torch.equal(sorted_cache.rows[sorted_cache.envs], torch.arange(batch))
        for env in range(batch):
            valid = min(int(plain.lengths[env]), context)
            row = int(sorted_cache.rows[env])
            torch.testing.assert_close(sorted_cache.layer_keys(0)[row, :valid], plain.keys[0, env, :valid])
            torch.testing.assert_close(
                sorted_cache.layer_values(0)[row, :valid], plain.values[0, env, :valid]
            )


@pytest.mark.parametrize("window_size", [None, 5])
def test_length_aware_rollout_equals_the_plain_rollout(
    window_size: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Step by step with resets at different steps, sorted rows + per-run attention match the plain path.

    The plain path keeps env ``i`` in row ``i`` and attends in one masked call over the longest row.
    """
    torch.manual_seed(0)
    rng = np.random.default_rng(2)
    config = specs.TransformerTrajEncoderConfig(**TINY_TRANSFORMER, window_size=window_size)
    encoder = TransformerTrajEncoder(config, tstep_dim=4, max_seq_len=12).eval()
    batch, steps = 10, 60
    seq = torch.randn(batch, steps, 4)
    dones = rng.random((batch, steps)) < 0.06
    dones[0] = False  # one env runs past the context and wraps
    dones[1, 3] = dones[2, 40] = True

    def rollout(sort_rows: bool, overhead: int) -> torch.Tensor:
        monkeypatch.setattr(row_groups, "CPU_GROUP_OVERHEAD", overhead)
        hidden = encoder.init_hidden_state(batch, "cpu")
        hidden = replace(hidden, sort_rows=sort_rows)
        times = np.zeros(batch, dtype=np.int64)
        outs = []
        with torch.no_grad():
            for step in range(steps):
                out, hidden = encoder(seq[:, step : step + 1], torch.as_tensor(times)[:, None], hidden)
                outs.append(out)
                times += 1
                times[dones[:, step]] = 0
                hidden = encoder.reset_hidden_state(hidden, dones[:, step])
        return torch.cat(outs, dim=1)

    # An overhead too large to ever split gives the plain single masked call.
    plain = rollout(sort_rows=False, overhead=10**9)
    torch.testing.assert_close(rollout(sort_rows=True, overhead=0), plain, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rollout(sort_rows=True, overhead=10**9), plain, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rollout(sort_rows=False, overhead=0), plain, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "config", [TINY_TRANSFORMER, {**TINY_TRANSFORMER, "pos_emb": "rope", "window_size": 3}], ids=str
)
def test_conformance_check_passes_with_a_split_at_every_length_change(
    config: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(row_groups, "CPU_GROUP_OVERHEAD", 0)
    check_traj_encoder(specs.TRANSFORMER_TRAJ, config)
