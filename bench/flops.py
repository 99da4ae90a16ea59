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
- Complex-valued work (the complex linear recurrences of LRU and FFM): FlopCounterMode's formulas read shapes
  only, so a matmul-class op on complex tensors would be counted at 2 FLOPs per multiply-add where it does 8 real
  FLOPs. Inside :func:`auditing_complex` such ops are counted at 8 and complex element-wise ops (a scan's decays
  and sums) are tallied with an estimate of their real FLOPs, outside the total like all element-wise work, so a
  table can say how much was left out (:class:`ComplexAudit`).
- The peak is *measured* on the same core in the same run: the median GFLOP/s of repeated square matmuls
  (fp32; bf16 where the hardware has bf16 matmul units: CPU flags ``avx512_bf16`` / ``amx_bf16``, or CUDA),
  with whatever thread count the caller set (the benchmarks use one).
- MFU = achieved GFLOP/s / measured peak.
"""

from __future__ import annotations

import contextlib
import contextvars
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
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
    audit = _AUDIT.get()
    if audit is None:
        with counter:
            result = fn(*args, **kwargs)
        return int(counter.get_total_flops()), result
    # The watch is entered first, so it sits below the counter: it sees the ops the counter actually ran
    # (after the counter's decompositions), each once.
    with _complex_watch(audit, counter.flop_registry), counter:
        result = fn(*args, **kwargs)
    return int(counter.get_total_flops()) + audit.take_matmul_correction(), result


@dataclass
class ComplexAudit:
    """Complex-valued work seen by :func:`count_flops` inside :func:`auditing_complex` (accumulated over calls).

    Attributes:
        matmul_ops: matmul-class ops (those FlopCounterMode has a formula for) run on complex tensors, by name:
            their FLOPs are in the total at 8 real FLOPs per complex multiply-add (the counter's formula gives 2).
        matmul_flops: the real FLOPs of those ops, as added to the total.
        elementwise_ops: calls of complex ops without a formula (element-wise ops such as a scan's decays and
            sums, and views such as the real and imaginary parts), not in the total, as no element-wise work is.
        elementwise_flops: an estimate of their real FLOPs (6 per complex-by-complex multiply, 2 per complex
            multiply by a real, add or subtract, per output element; other ops are counted as calls only).
    """

    matmul_ops: dict[str, int] = field(default_factory=dict)
    matmul_flops: int = 0
    elementwise_ops: int = 0
    elementwise_flops: int = 0
    _pending: int = field(default=0, repr=False)

    def take_matmul_correction(self) -> int:
        """FLOPs to add to the counter's total for the complex matmuls of the last count (6 per multiply-add)."""
        pending, self._pending = self._pending, 0
        return pending

    def to_json(self) -> dict[str, Any]:
        """The audit as JSON-safe fields."""
        data = asdict(self)
        data.pop("_pending")
        return data

    def note(self, counted: float | None = None) -> str | None:
        """One sentence on the complex work in a count (None when there was none).

        Args:
            counted: the FLOP total the audit belongs to, to put the element-wise estimate against.
        """
        if not self.matmul_ops and not self.elementwise_ops:
            return None
        parts = []
        if self.matmul_ops:
            names = ", ".join(sorted(self.matmul_ops))
            parts.append(f"complex matmuls ({names}) are counted at 8 real FLOPs per multiply-add")
        if self.elementwise_ops:
            sentence = "complex element-wise ops are not counted, as no element-wise work is"
            if counted:
                share = self.elementwise_flops / counted
                sentence += f" (their multiplies and adds: ~{share:.1%} of the counted FLOPs)"
            parts.append(sentence)
        return "; ".join(parts)


_AUDIT: contextvars.ContextVar[ComplexAudit | None] = contextvars.ContextVar(
    "flops_complex_audit", default=None
)


@contextlib.contextmanager
def auditing_complex() -> Iterator[ComplexAudit]:
    """Every :func:`count_flops` inside the block counts complex matmuls right and tallies complex element-wise
    work in the yielded :class:`ComplexAudit` (which accumulates over the block's counts)."""
    audit = ComplexAudit()
    token = _AUDIT.set(audit)
    try:
        yield audit
    finally:
        _AUDIT.reset(token)


# Element-wise ops whose real FLOPs per complex output element are estimated (the rest count as calls only).
_COMPLEX_ELEMENTWISE = {"mul": (6, 2), "add": (2, 2), "sub": (2, 2)}  # (complex x complex, complex x real)


def _complex_watch(audit: ComplexAudit, formulas: dict[Any, Any]) -> Any:
    """A dispatch mode recording into ``audit`` every op that touches a complex tensor."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class _Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
            outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            if not any(t.is_complex() for t in inputs + outputs):
                return out
            packet = getattr(func, "overloadpacket", func)
            name = str(packet).removeprefix("aten.")
            if packet in formulas:
                # The counter books 2 FLOPs per complex multiply-add; a complex multiply-add is 4 real
                # multiplies and 4 real adds, so 6 more are added.
                counted = int(formulas[packet](*args, **kwargs, out_val=out))
                audit.matmul_ops[name] = audit.matmul_ops.get(name, 0) + 1
                audit.matmul_flops += 4 * counted
                audit._pending += 3 * counted
                return out
            audit.elementwise_ops += 1
            per_element = _COMPLEX_ELEMENTWISE.get(name.removesuffix("_"))
            if per_element is not None and outputs and outputs[0].is_complex():
                both = sum(t.is_complex() for t in inputs) >= 2
                audit.elementwise_flops += per_element[0 if both else 1] * outputs[0].numel()
            return out

    return _Watch()


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
