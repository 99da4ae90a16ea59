"""``attention="sliding_sink"``: a sliding window plus an attention sink and logit clipping (AMAGO's
``ClippedSlidingSinkAttention``), in training, in cached rollouts and in the fixed-shape (exported) step.

The values against AMAGO's own class are in ``test_nets_against_amago.py``; here every path is checked against
the definition written out (an explicit masked softmax, one query at a time).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from amago_core.plugins.spec import ComponentSpec
from amago_core.testing.check import check_component
from amago_core.testing.nets_checks import check_traj_encoder
from amago_nets import row_groups, specs
from amago_nets.attention import attend_cached, attend_window
from amago_nets.kv_cache import KVCache
from amago_nets.traj_transformer import TransformerTrajEncoder

TINY = {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2, "attention": "sliding_sink"}
NO_DROPOUT = {"dropout_ff": 0.0, "dropout_emb": 0.0}
# A clip of 0.05 is far below the logits of these tiny networks (about ±1), so it is active on every pair.
SINK_CASES = [
    {**TINY, "window_size": 3, "sink_size": 2, "logit_clip": 0.05},
    {**TINY, "window_size": 3, "sink_size": 2},
    {**TINY, "window_size": 2, "sink_size": 1, "logit_clip": 0.05, "pos_emb": "rope"},
    {**TINY, "window_size": 1, "sink_size": 3, "logit_clip": 0.5, "sigma_reparam": False},
    {**TINY, "logit_clip": 0.05},
    {**TINY, "window_size": 4, "logit_clip": 0.05, "pos_emb": "learnable", "max_time_idx": 64},
]


def _definition(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, context: int, sink: int, clip: float | None
) -> torch.Tensor:
    """Query ``i`` sees key ``j <= i`` when ``i - j < context`` or ``j < sink``; logits ``q·k / sqrt(d)``,
    clamped to ±clip, softmax over the visible keys only."""
    outs = []
    for i in range(q.shape[1]):
        visible = [j for j in range(i + 1) if i - j < context or j < sink]
        logits = torch.einsum("bhd,bjhd->bhj", q[:, i], k[:, visible]) / math.sqrt(q.shape[-1])
        if clip is not None:
            logits = logits.clamp(-clip, clip)
        outs.append(torch.einsum("bhj,bjhd->bhd", torch.softmax(logits, dim=-1), v[:, visible]))
    return torch.stack(outs, dim=1)


def _qkv(length: int, seed: int = 0) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(seed)
    # Logits spread over about ±6: every clip tested below is active on most pairs.
    return tuple((1.5 * torch.randn(2, length, 2, 8, generator=generator)).requires_grad_() for _ in range(3))


@pytest.mark.parametrize(
    ("length", "context", "sink", "clip"),
    [
        (12, 4, 2, 0.5),  # the window slides past the sink
        (12, 4, 2, None),  # no clip: runs through sdpa with the sink mask
        (12, 1, 3, 2.0),  # each step sees only itself and the sink
        (12, 5, 0, 1.0),  # clip alone over a sliding window
        (6, 8, 2, 0.5),  # the sequence fits the window: plainly causal, clipped
        (6, 8, 2, None),  # ... and without a clip: sdpa's causal path
    ],
)
def test_training_attention_is_the_masked_softmax_it_defines(
    length: int, context: int, sink: int, clip: float | None
) -> None:
    q, k, v = _qkv(length)
    out = attend_window(
        q, k, v, context=context, dropout_p=0.0, backend="sliding_sink", sink=sink, logit_clip=clip
    )
    want = _definition(q, k, v, context, sink, clip)
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-5)
    upstream = torch.randn_like(out)
    grads = torch.autograd.grad((out * upstream).sum(), (q, k, v))
    want_grads = torch.autograd.grad((want * upstream).sum(), (q, k, v))
    for got, expected in zip(grads, want_grads, strict=True):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_cached_attention_clips_the_logits_and_ignores_invalid_slots() -> None:
    torch.manual_seed(0)
    q = 2 * torch.randn(3, 1, 2, 8)
    keys, values = 2 * torch.randn(3, 6, 2, 8), torch.randn(3, 6, 2, 8)
    valid = torch.tensor([6, 2, 4])
    out = attend_cached(q, keys, values, valid, backend="sliding_sink", logit_clip=0.3)
    for row, n in enumerate(valid.tolist()):
        logits = torch.einsum("hd,jhd->hj", q[row, 0], keys[row, :n]) / math.sqrt(8)
        want = torch.softmax(logits.clamp(-0.3, 0.3), dim=-1)
        torch.testing.assert_close(out[row, 0], torch.einsum("hj,jhd->hd", want, values[row, :n]))


def test_the_cache_keeps_the_sink_steps_and_rings_over_the_rest() -> None:
    cache = KVCache.empty(1, 1, 5, 1, 1, "cpu", sink=2)
    slots, valid = [], []
    for _ in range(11):
        slots.append(int(cache.write_slots()[0]))
        valid.append(int(cache.valid_after_write()[0]))
        cache = cache.advanced()
    assert slots == [0, 1, 2, 3, 4, 2, 3, 4, 2, 3, 4]
    assert valid == [1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 5]


def test_a_cache_refuses_a_sink_that_leaves_no_window() -> None:
    with pytest.raises(ValueError, match="leave slots for the window"):
        KVCache.empty(1, 2, 3, 1, 4, "cpu", sink=3)


@pytest.mark.parametrize("config", SINK_CASES, ids=str)
def test_sliding_sink_passes_the_conformance_check(config: dict) -> None:
    """Shapes, gradients, causality, and rollout == full forward with per-row resets past the window."""
    check_traj_encoder(specs.TRANSFORMER_TRAJ, config)


def test_sliding_sink_passes_the_check_with_a_split_at_every_length_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(row_groups, "CPU_GROUP_OVERHEAD", 0)
    check_traj_encoder(specs.TRANSFORMER_TRAJ, SINK_CASES[0])


def test_sliding_sink_passes_check_component() -> None:
    report = check_component("traj-encoders", "transformer", config=SINK_CASES[0])
    assert report.passed[-1].endswith("behaviour checks")


@pytest.mark.usefixtures("helpers_on_path")
def test_the_check_catches_a_cache_that_overwrites_the_sink() -> None:
    broken = ComponentSpec(
        name="transformer",
        group=specs.TRAJ_GROUP,
        summary="deliberately broken",
        config=specs.TransformerTrajEncoderConfig,
        factory="nets_test_helpers:SinklessCacheTransformer",
    )
    with pytest.raises(AssertionError, match="differs from the full forward"):
        check_traj_encoder(broken, SINK_CASES[0])


@pytest.mark.parametrize("overhead", [0, 10**9], ids=["split-rows", "one-group"])
def test_long_rollouts_with_staggered_resets_equal_each_episodes_training_forward(
    overhead: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten envs, 60 steps, resets at random steps (one env never resets and wraps its ring many times)."""
    monkeypatch.setattr(row_groups, "CPU_GROUP_OVERHEAD", overhead)
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    config = specs.TransformerTrajEncoderConfig(**{**SINK_CASES[0], **NO_DROPOUT})
    encoder = TransformerTrajEncoder(config, tstep_dim=4, max_seq_len=8).eval()
    batch, steps = 10, 60
    seq = torch.randn(batch, steps, 4)
    dones = rng.random((batch, steps)) < 0.08
    dones[0] = False
    times = np.zeros((batch, steps), dtype=np.int64)
    for step in range(1, steps):
        times[:, step] = np.where(dones[:, step - 1], 0, times[:, step - 1] + 1)
    time_idxs = torch.as_tensor(times)
    hidden = encoder.init_hidden_state(batch, "cpu")
    outs = []
    with torch.no_grad():
        for step in range(steps):
            out, hidden = encoder(seq[:, step : step + 1], time_idxs[:, step : step + 1], hidden)
            outs.append(out)
            hidden = encoder.reset_hidden_state(hidden, dones[:, step])
        stepped = torch.cat(outs, dim=1)
        for row in range(batch):
            starts = [0, *(np.nonzero(dones[row])[0] + 1)]
            for start, stop in zip(starts, [*starts[1:], steps], strict=True):
                if start == stop:
                    continue
                full, _ = encoder(seq[row : row + 1, start:stop], time_idxs[row : row + 1, start:stop])
                torch.testing.assert_close(stepped[row, start:stop], full[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("env_order", [True, False], ids=["rows-in-env-order", "sorted-rows"])
def test_the_fixed_shape_step_equals_the_eager_step(env_order: bool) -> None:
    """What a traced or exported rollout step runs: same outputs and cache, sink slots included."""
    torch.manual_seed(0)
    config = specs.TransformerTrajEncoderConfig(**SINK_CASES[0])
    encoder = TransformerTrajEncoder(config, tstep_dim=6, max_seq_len=8).eval()
    rows, steps = 4, 25
    ends = np.zeros((steps, rows), dtype=bool)
    ends[[3, 10, 11], 1] = ends[[6, 19], 2] = ends[::4, 3] = True
    with encoder.exportable_memory() if env_order else contextlib.nullcontext():
        eager = encoder.init_hidden_state(rows, "cpu")
    fixed = replace(eager, keys=eager.keys.clone(), values=eager.values.clone())
    time_idx = torch.zeros(rows, 1, dtype=torch.long)
    with torch.no_grad():
        for step in range(steps):
            seq = torch.randn(rows, 1, 6)
            eager_out, eager = encoder(seq, time_idx, eager)
            fixed_out, fixed = encoder.fixed_shape_step(seq, time_idx, fixed)
            torch.testing.assert_close(fixed_out, eager_out)
            for name in ("keys", "values", "lengths", "envs", "rows"):
                torch.testing.assert_close(getattr(fixed, name), getattr(eager, name))
            eager = encoder.reset_hidden_state(eager, ends[step])
            fixed = encoder.reset_hidden_state(fixed, ends[step])
            time_idx = torch.where(torch.as_tensor(ends[step])[:, None], 0, time_idx + 1)


def test_the_sink_and_the_clip_change_the_encoders_output() -> None:
    """Guards the checks above: with these sizes both options are in play, not silently no-ops."""
    seq, times = torch.randn(2, 12, 6), torch.arange(12).expand(2, -1)

    def run(**options: object) -> torch.Tensor:
        torch.manual_seed(0)
        config = specs.TransformerTrajEncoderConfig(**{**TINY, **NO_DROPOUT, "window_size": 3, **options})
        encoder = TransformerTrajEncoder(config, tstep_dim=6, max_seq_len=12).eval()
        with torch.no_grad():
            return encoder(seq, times)[0]

    plain = run()
    assert not torch.allclose(run(sink_size=2), plain, atol=1e-4)
    assert not torch.allclose(run(logit_clip=0.05), plain, atol=1e-4)


def test_the_cache_holds_the_window_and_the_sink() -> None:
    config = specs.TransformerTrajEncoderConfig(**{**TINY, "window_size": 3, "sink_size": 2})
    cache = TransformerTrajEncoder(config, tstep_dim=4, max_seq_len=8).init_hidden_state(2, "cpu")
    assert (cache.context, cache.sink) == (5, 2)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"attention": "sliding_sink", "sink_size": 2}, "needs window_size"),
        ({"attention": "sdpa", "window_size": 4, "sink_size": 2}, "belong to attention='sliding_sink'"),
        ({"attention": "flex", "logit_clip": 1.0}, "belong to attention='sliding_sink'"),
        ({"attention": "sliding_sink", "window_size": 4, "sink_size": -1}, "sink_size"),
        ({"attention": "sliding_sink", "logit_clip": 0.0}, "logit_clip"),
        ({"attention": "sliding_sink", "logit_clip": -2.0}, "logit_clip"),
    ],
)
def test_the_config_refuses_inconsistent_options(options: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        specs.TransformerTrajEncoderConfig(**options)


def test_the_config_round_trips_through_json() -> None:
    config = specs.TransformerTrajEncoderConfig(**SINK_CASES[0])
    assert specs.TransformerTrajEncoderConfig.model_validate_json(config.model_dump_json()) == config


@pytest.mark.slow
def test_a_captured_step_keeps_the_sink_at_lengths_it_was_not_captured_at() -> None:
    """torch.export captures a step at a fresh cache; stepping that graph past the window must keep the sink."""
    torch.manual_seed(0)
    config = specs.TransformerTrajEncoderConfig(**SINK_CASES[0], sigma_reparam=False)
    encoder = TransformerTrajEncoder(config, tstep_dim=6, max_seq_len=8).eval()
    fields = ("keys", "values", "lengths", "envs", "rows")

    class Step(torch.nn.Module):
        def __init__(self, template: KVCache) -> None:
            super().__init__()
            self.encoder, self.template = encoder, template

        def forward(self, seq: torch.Tensor, time_idx: torch.Tensor, *cache: torch.Tensor) -> tuple:
            out, after = self.encoder(
                seq, time_idx, replace(self.template, **dict(zip(fields, cache, strict=True)))
            )
            return (out, *(getattr(after, name) for name in fields))

    rows, steps = 3, 16
    ends = np.zeros((steps, rows), dtype=bool)
    ends[[4, 9], 1] = True
    with encoder.exportable_memory():
        eager = encoder.init_hidden_state(rows, "cpu")
    template = replace(eager, keys=eager.keys.clone(), values=eager.values.clone())
    state = tuple(getattr(template, name) for name in fields)
    time_idx = torch.zeros(rows, 1, dtype=torch.long)
    inputs = torch.randn(steps, rows, 1, 6)
    with torch.no_grad():
        captured = torch.export.export(Step(template), (inputs[0], time_idx, *state)).module()
        for step in range(steps):
            eager_out, eager = encoder(inputs[step], time_idx, eager)
            out, *state_after = captured(inputs[step], time_idx, *state)
            torch.testing.assert_close(out, eager_out)
            after = encoder.reset_hidden_state(
                replace(template, **dict(zip(fields, state_after, strict=True))), ends[step]
            )
            eager = encoder.reset_hidden_state(eager, ends[step])
            state = tuple(getattr(after, name) for name in fields)
            time_idx = torch.where(torch.as_tensor(ends[step])[:, None], 0, time_idx + 1)
    assert int(eager.lengths[0]) == steps > int(eager.context)  # row 0 wrapped its ring
