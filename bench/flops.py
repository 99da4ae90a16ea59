"""FLOPs counted, matmul peak measured, MFU: the utilisation figures the benchmarks print beside their rates.

Shared by ``bench/update.py``, ``bench/throughput.py``, ``bench/vs_amago.py`` and the AMAGO-side program
``bench/flops_amago_ref.py`` (which runs in AMAGO's own venv, so this module imports nothing of the project and
works with any torch from 2.1 on).

- FLOPs are *counted* with ``torch.utils.flop_counter.FlopCounterMode``: every matmul-class op torch dispatches
  (``mm``, ``addmm``, ``bmm``, ``baddbmm``, convolutions, scaled-dot-product attention, forward and backward) at
  2 FLOPs per multiply-add. Element-wise work (activations, norms, the optimiser step, a selective scan written
  in element-wise ops) is not counted: it is a small share of these models' arithmetic, and leaving it out is
  the usual MFU convention. Ops torch has no formula for are not counted either: flash-attn's and mamba-ssm's
  own CUDA kernels (their runs' FLOPs are a lower bound).
- The peak is *measured* on the same core in the same run: the median GFLOP/s of repeated square matmuls
  (fp32; bf16 where the hardware has bf16 matmul units: CPU flags ``avx512_bf16`` / ``amx_bf16``, or CUDA),
  with whatever thread count the caller set (the benchmarks use one).
- MFU = achieved GFLOP/s / measured peak.
"""

from __future__ import annotations

import contextlib
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

# CPU flags that decide which matmul kernels the core can run; printed with every table.
RELEVANT_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "amx_tile",
    "amx_bf16",
)
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def count_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[int, Any]:
    """Counts the FLOPs of one call of ``fn`` (forward and, if ``fn`` calls it, backward).

    Args:
        fn: What to count, e.g. one whole gradient update.
        *args: Passed to ``fn``.
        **kwargs: Passed to ``fn``.

    Returns:
        The FLOP total and ``fn``'s result.
    """
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    # Why: its ModuleTracker hooks every module's inputs for backward and asserts when an input requires grad
    # without having a grad_fn (AMAGO's train_step passes such tensors); only the total is needed here, which
    # the counter books under "Global" whatever the module.
    counter.mod_tracker = _GlobalOnly()
    with counter:
        result = fn(*args, **kwargs)
    return int(counter.get_total_flops()), result


class _GlobalOnly:
    """Stands in for FlopCounterMode's module tracker: every op counts towards the total only."""

    parents = frozenset({"Global"})

    def __enter__(self) -> _GlobalOnly:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@dataclass
class MethodCounter:
    """FLOPs of every call of one method, accumulated while :func:`counting_method` is active."""

    flops: int = 0
    calls: int = 0
    per_call: list[int] = field(default_factory=list)


@contextlib.contextmanager
def counting_method(obj: Any, name: str) -> Iterator[MethodCounter]:
    """Counts the FLOPs of every call of ``obj.name`` inside the block (an instance attribute shadows the method).

    Used to count a policy's acting step inside the library's own collection loop, so the count covers the real
    inputs: resets, growing Transformer caches, the exploration wrapper's batch.

    Args:
        obj: The object whose method is wrapped (e.g. the agent).
        name: The method's name (e.g. ``"get_actions"``).

    Yields:
        The counter, filled as calls happen.
    """
    original = getattr(obj, name)
    own = name in vars(obj)  # already shadowed per instance: put that back rather than deleting it
    counter = MethodCounter()

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        flops, result = count_flops(original, *args, **kwargs)
        counter.flops += flops
        counter.calls += 1
        counter.per_call.append(flops)
        return result

    setattr(obj, name, wrapped)
    try:
        yield counter
    finally:
        if own:
            setattr(obj, name, original)
        else:
            delattr(obj, name)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    n: int | None = None,
    repeats: int = 9,
    min_seconds: float = 0.05,
) -> float:
    """The median GFLOP/s of ``n``×``n`` @ ``n``×``n`` matmuls: the core's practical peak for ``dtype``.

    Args:
        dtype: ``torch.float32`` or ``torch.bfloat16``.
        device: ``"cpu"`` (uses the caller's torch thread count) or a CUDA device.
        n: Matrix side; 1024 on CPU (large enough to run at the kernel's full speed, small enough to stay
            under a second in all), 8192 on CUDA.
        repeats: Timed repeats; the median is returned, so one disturbed repeat on a shared machine is ignored.
        min_seconds: Each repeat runs enough matmuls to last at least this long.

    Returns:
        GFLOP/s (2·n³ FLOPs per matmul).
    """
    device = torch.device(device)
    n = n or (8192 if device.type == "cuda" else 1024)
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(device=device, dtype=dtype)
    b = torch.randn(n, n, generator=gen).to(device=device, dtype=dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)
    # Warm-up: first calls pick kernels and fault in pages; then size one repeat to last min_seconds.
    for _ in range(2):
        torch.mm(a, b, out=out)
    _sync(device)
    start = time.perf_counter()
    torch.mm(a, b, out=out)
    _sync(device)
    one = max(time.perf_counter() - start, 1e-6)
    per_repeat = max(1, int(min_seconds / one))
    rates = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        for _ in range(per_repeat):
            torch.mm(a, b, out=out)
        _sync(device)
        rates.append(2 * n**3 * per_repeat / (time.perf_counter() - start) / 1e9)
    return statistics.median(rates)


def cpu_info() -> dict[str, Any]:
    """The CPU's model name and the matmul-relevant flags from ``/proc/cpuinfo`` (empty on other systems)."""
    model, flags = platform.processor() or platform.machine(), set()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model in ("", platform.machine(), platform.processor()):
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    return {"model": model, "flags": [flag for flag in RELEVANT_FLAGS if flag in flags]}


def bf16_reason(device: str | torch.device = "cpu") -> str | None:
    """Why a bf16 peak is not measured on ``device`` (None when it is): plain AVX2 emulates bf16 matmuls."""
    device = torch.device(device)
    if device.type == "cuda":
        return None if torch.cuda.is_bf16_supported() else "CUDA device without bf16"
    flags = cpu_info()["flags"]
    if any(flag in flags for flag in BF16_CPU_FLAGS):
        return None
    return f"no {'/'.join(BF16_CPU_FLAGS)} on this CPU (bf16 matmuls are emulated)"


def peaks(device: str | torch.device = "cpu") -> dict[str, Any]:
    """The measured fp32 (and where supported bf16) matmul peaks on ``device``, with what was measured.

    Returns:
        ``{"fp32": GFLOP/s, "bf16": GFLOP/s or None, "bf16_note": why not or None, "device": text,
        "threads": int, "torch": version, "cpu": cpu_info()}``.
    """
    device = torch.device(device)
    reason = bf16_reason(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_info()["model"]
    return {
        "fp32": matmul_peak(torch.float32, device),
        "bf16": None if reason else matmul_peak(torch.bfloat16, device),
        "bf16_note": reason,
        "device": name,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        # What "fp32" means for a CUDA matmul depends on this switch (TF32 tensor cores when not "highest").
        "tf32": device.type == "cuda" and torch.get_float32_matmul_precision() != "highest",
        "cpu": cpu_info(),
    }


def gflop(flops: float | None) -> str:
    """FLOPs as GFLOP with 3 significant digits (MFLOP below 0.1 GFLOP, where policy steps sit)."""
    if flops is None:
        return "-"
    if flops < 1e8:
        return f"{flops / 1e6:.3g} MFLOP"
    return f"{flops / 1e9:.3g} GFLOP"


def mfu(
    flops: float | None, seconds: float | None, peak_gflops: float | None
) -> tuple[float | None, float | None]:
    """(achieved GFLOP/s, MFU) for ``flops`` done in ``seconds`` against ``peak_gflops``; Nones when unknown."""
    if not flops or not seconds or seconds <= 0:
        return None, None
    rate = flops / seconds / 1e9
    return rate, (rate / peak_gflops if peak_gflops else None)


def mfu_cells(flops: float | None, seconds: float | None, peak_gflops: float | None) -> str:
    """``GFLOP/s (MFU %)`` for a table cell."""
    rate, share = mfu(flops, seconds, peak_gflops)
    if rate is None:
        return "-"
    return f"{rate:.3g} GFLOP/s ({share:.0%})" if share is not None else f"{rate:.3g} GFLOP/s"


def peak_line(peak: dict[str, Any], label: str = "") -> str:
    """One line naming the device, its flags, and the peaks measured in this run."""
    bf16 = f"{peak['bf16']:.3g} GFLOP/s" if peak.get("bf16") else f"n/a ({peak.get('bf16_note')})"
    flags = " ".join(peak["cpu"]["flags"]) or "-"
    where = f"{label}: " if label else ""
    fp32 = "fp32 (TF32 allowed)" if peak.get("tf32") else "fp32"
    return (
        f"{where}matmul peak measured in this run on {peak['device']} (CPU flags: {flags}), "
        f"{peak['threads']} thread(s), torch {peak['torch']}: {fp32} {peak['fp32']:.3g} GFLOP/s, bf16 {bf16}"
    )
