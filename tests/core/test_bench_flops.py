"""``bench/flops.py`` counts a known matmul's FLOPs exactly and formats the MFU figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

FLOPS_PY = Path(__file__).resolve().parents[2] / "bench" / "flops.py"


def load_flops():
    # bench/ is scripts, not a package: load the module by path, as the benchmarks do.
    spec = importlib.util.spec_from_file_location("bench_flops", FLOPS_PY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_a_matmul_counts_two_flops_per_multiply_add() -> None:
    flops = load_flops()
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    counted, result = flops.count_flops(torch.mm, a, b)
    assert counted == 2 * 3 * 4 * 5
    assert result.shape == (3, 5)


def test_forward_and_backward_of_a_linear_layer_are_counted() -> None:
    flops = load_flops()
    layer = torch.nn.Linear(8, 16, bias=False)
    x = torch.randn(32, 8, requires_grad=True)
    counted, _ = flops.count_flops(lambda: layer(x).sum().backward())
    # forward x @ W^T, backward grad_x = g @ W and grad_W = g^T @ x: three matmuls of 32 x 8 x 16.
    assert counted == 3 * 2 * 32 * 8 * 16


def test_counting_a_method_accumulates_every_call_and_restores_it() -> None:
    flops = load_flops()
    layer = torch.nn.Linear(4, 4, bias=False)
    with flops.counting_method(layer, "forward") as counter:
        layer(torch.randn(2, 4))
        layer(torch.randn(3, 4))
    assert (counter.calls, counter.flops) == (2, 2 * (2 + 3) * 4 * 4)
    assert "forward" not in vars(layer)


def test_a_tensor_needing_grad_without_grad_fn_does_not_break_the_count() -> None:
    # FlopCounterMode's module tracker asserts on such module inputs; the counter leaves the tracker out.
    flops = load_flops()
    layer = torch.nn.Linear(4, 4)
    leaf = torch.randn(2, 4, requires_grad=True)
    counted, _ = flops.count_flops(lambda: layer(leaf).sum().backward())
    assert counted > 0


def test_the_mfu_cell_and_the_peak_line() -> None:
    flops = load_flops()
    assert flops.mfu_cells(40e9, 1.0, 50.0) == "40 GFLOP/s (80%)"
    assert flops.mfu_cells(None, 1.0, 50.0) == "-"
    assert flops.gflop(1.07e6) == "1.07 MFLOP"
    peak = {
        "fp32": 60.0,
        "bf16": None,
        "bf16_note": "no avx512_bf16",
        "device": "CPU X",
        "threads": 1,
        "torch": "2.x",
        "cpu": {"model": "CPU X", "flags": ["avx2", "fma"]},
    }
    line = flops.peak_line(peak)
    assert "avx2 fma" in line
    assert "fp32 60 GFLOP/s" in line
    assert "bf16 n/a" in line
