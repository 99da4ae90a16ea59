"""CUDA kernels: flash-attn and mamba_ssm keep the rollout contract (skipped without a GPU)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from amago_core.testing.nets_checks import check_traj_encoder
from amago_nets import specs
from amago_nets.selective_scan import scan_chunked, scan_kernel

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

TINY_TRANSFORMER = {"d_model": 64, "n_heads": 4, "d_ff": 64, "n_layers": 2}


@pytest.mark.parametrize("attention", ["sdpa", "flex"])
def test_transformer_on_cuda(attention: str) -> None:
    check_traj_encoder(
        specs.TRANSFORMER_TRAJ, {**TINY_TRANSFORMER, "attention": attention}, device="cuda", atol=1e-3
    )


@pytest.mark.skipif(
    importlib.util.find_spec("flash_attn") is None, reason='needs pip install "amago-nets[flash]"'
)
@pytest.mark.parametrize("window_size", [None, 3])
def test_flash_transformer_keeps_the_rollout_contract(window_size: int | None) -> None:
    # bf16 kernels and caches: compare at bf16 precision.
    config = {**TINY_TRANSFORMER, "attention": "flash", "window_size": window_size}
    check_traj_encoder(specs.TRANSFORMER_TRAJ, config, device="cuda", atol=5e-2)


def test_mamba_on_cuda() -> None:
    check_traj_encoder(
        specs.MAMBA_TRAJ, {"d_model": 16, "d_state": 4, "n_layers": 2}, device="cuda", atol=1e-3
    )


@pytest.mark.skipif(
    importlib.util.find_spec("mamba_ssm") is None, reason='needs pip install "amago-nets[mamba]"'
)
def test_mamba_kernel_equals_the_pure_pytorch_scan() -> None:
    torch.manual_seed(0)
    batch, length, d_inner, d_state = 2, 37, 8, 4
    x = torch.randn(batch, length, d_inner, device="cuda")
    dt = torch.nn.functional.softplus(torch.randn(batch, length, d_inner, device="cuda"))
    A = -torch.rand(d_inner, d_state, device="cuda")
    B, C = (
        torch.randn(batch, length, d_state, device="cuda"),
        torch.randn(batch, length, d_state, device="cuda"),
    )
    D = torch.randn(d_inner, device="cuda")
    y_ref, h_ref = scan_chunked(x, dt, A, B, C, D, chunk_size=8)
    y, h = scan_kernel(x, dt, A, B, C, D)
    torch.testing.assert_close(y, y_ref, atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(h.float(), h_ref, atol=1e-3, rtol=1e-3)


@pytest.mark.skipif(
    importlib.util.find_spec("mamba_ssm") is None, reason='needs pip install "amago-nets[mamba]"'
)
def test_mamba_with_kernels_keeps_the_rollout_contract() -> None:
    check_traj_encoder(
        specs.MAMBA_TRAJ, {"d_model": 16, "d_state": 4, "n_layers": 2}, device="cuda", atol=1e-3
    )
