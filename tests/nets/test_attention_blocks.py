"""``attend_blocks``: bf16 / fp16 windows on a CPU attend in fp32 query blocks; the result is sdpa's, fp32 unchanged."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from amago_core.plugins import registries
from amago_nets import attention
from amago_nets.attention import _window_mask, attend_blocks, attend_window, runs_in_blocks
from amago_nets.real_steps import RealSteps

BATCH, LENGTH, HEADS, DIM = 6, 40, 2, 8
LENGTHS = [40, 5, 17, 40, 1, 33]  # unsorted, with ties and a one-step row


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, context: int) -> torch.Tensor:
    """sdpa over the whole padded window with the sliding causal mask, in fp64: (B, L, H, d)."""
    mask = _window_mask(q.shape[1], context, q.device)
    heads = (t.transpose(1, 2) for t in (q, k, v))
    return F.scaled_dot_product_attention(*heads, attn_mask=mask).transpose(1, 2)


def window(seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [
        torch.randn(BATCH, LENGTH, HEADS, DIM, generator=generator, dtype=torch.float64) for _ in range(4)
    ]


@pytest.mark.parametrize("context", [LENGTH + 5, LENGTH, LENGTH - 1, 12])
@pytest.mark.parametrize("block", [8, 13, 64])
def test_blocks_of_a_whole_window_compute_sdpa_and_its_gradients(context: int, block: int) -> None:
    q, k, v, grad = window(0)
    inputs = [t.detach().requires_grad_() for t in (q, k, v)]
    expected = reference(*inputs, context)
    expected_grads = torch.autograd.grad(expected, inputs, grad)
    blocked_inputs = [t.float().requires_grad_() for t in (q, k, v)]
    out = attend_blocks(*blocked_inputs, context=context, block=block)
    grads = torch.autograd.grad(out, blocked_inputs, grad.float())
    torch.testing.assert_close(out.double(), expected, rtol=0, atol=1e-5)
    for got, want in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("context", [LENGTH, LENGTH - 1, 12])
@pytest.mark.parametrize("block", [8, 64])
def test_blocks_over_real_steps_give_the_padded_windows_real_outputs(context: int, block: int) -> None:
    real = RealSteps(torch.arange(LENGTH)[None, :] < torch.tensor(LENGTHS)[:, None])
    q, k, v, grad = window(1)
    grad = grad * real.valid[:, :, None, None]  # what a loss over the real steps sends back
    inputs = [t.detach().requires_grad_() for t in (q, k, v)]
    expected = reference(*inputs, context)
    expected_grads = torch.autograd.grad(expected, inputs, grad)
    steps = [real.take(t.float()).requires_grad_() for t in (q, k, v)]  # (1, N, H, d)
    out = attend_blocks(*steps, context=context, real=real, block=block)
    grads = torch.autograd.grad(out, steps, real.take(grad.float()))
    assert out.shape == steps[0].shape
    torch.testing.assert_close(out.double(), real.take(expected), rtol=0, atol=1e-5)
    for got, want in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(got.double(), real.take(want), rtol=0, atol=1e-5)
        # Padded keys are seen by no real query: nothing flows to them.
        assert torch.equal(want[~real.valid], torch.zeros_like(want[~real.valid]))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_low_precision_window_on_a_cpu_runs_in_blocks_and_keeps_its_dtype(dtype: torch.dtype) -> None:
    q, k, v, grad = window(2)
    low = [t.to(dtype).requires_grad_() for t in (q, k, v)]
    assert runs_in_blocks(low[0], dropout_p=0.0)
    assert not runs_in_blocks(low[0], dropout_p=0.1)  # the kernel calls here take no dropout
    out = attend_window(*low, context=LENGTH, dropout_p=0.0, backend="sdpa")
    out.backward(grad.to(dtype))
    assert out.dtype == dtype
    assert all(t.grad is not None and t.grad.dtype == dtype for t in low)
    expected = reference(*(t.detach().double() for t in low), LENGTH)
    torch.testing.assert_close(out.double(), expected, rtol=0, atol=2e-2)


def test_fp32_windows_run_sdpa_as_before() -> None:
    q, k, v, _ = (t.float() for t in window(3))
    assert not runs_in_blocks(q, dropout_p=0.0)
    for context in (LENGTH, 12):
        out = attend_window(q, k, v, context=context, dropout_p=0.0, backend="sdpa")
        heads = [t.transpose(1, 2) for t in (q, k, v)]
        if context >= LENGTH:
            direct = F.scaled_dot_product_attention(*heads, is_causal=True)
        else:
            direct = F.scaled_dot_product_attention(*heads, attn_mask=_window_mask(LENGTH, context, q.device))
        assert torch.equal(out, direct.transpose(1, 2))


def test_the_transformer_under_bf16_autocast_attends_in_blocks_over_real_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch.manual_seed(0)
    config = {"kind": "transformer", "d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 2}
    encoder = registries().traj_encoders.builder({**config, "dropout_ff": 0.0, "dropout_emb": 0.0})(
        tstep_dim=6, max_seq_len=9
    )
    seq = torch.randn(4, 10, 6)
    time_idxs = torch.arange(10).expand(4, 10)
    pad_mask = torch.arange(10)[None, :] >= torch.tensor([10, 3, 7, 1])[:, None]
    calls = []
    blocks = attention.attend_blocks

    def counting(*args: object, **kwargs: object) -> torch.Tensor:
        calls.append(kwargs.get("real"))
        return blocks(*args, **kwargs)

    monkeypatch.setattr("amago_nets.traj_transformer.attend_blocks", counting)
    full, _ = encoder(seq, time_idxs, None, pad_mask=pad_mask)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low, _ = encoder(seq, time_idxs, None, pad_mask=pad_mask)
    assert len(calls) == 2  # one per layer
    assert all(real is not None for real in calls)  # on the real steps
    real = ~pad_mask
    torch.testing.assert_close(low.float()[real], full[real], rtol=0, atol=0.1)
    assert torch.equal(low[pad_mask], torch.zeros_like(low[pad_mask]))
