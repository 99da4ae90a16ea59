"""What the machine offers a run's arithmetic: the CPU's flags, native bf16, and what reduced precision costs.

``optim.mixed_precision=auto`` resolves here at start, per phase (the update, the rollouts): fp32 where the training
device does not compute bf16 natively; where it does, the start times both phases in both precisions
(``experiment.precision_probe``) and each takes bf16 only where it measured faster. Asking for a precision the CPU
emulates gets one warning line with the slowdown a tiny timed matmul measured.

Torch-free at import (the CLI and listings may import this module).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

Precision = Literal["no", "fp16", "bf16"]
"""What the accelerator gets: fp32 (``no``) or a reduced-precision autocast."""

PRECISIONS: tuple[Precision, ...] = ("no", "fp16", "bf16")

AUTO_VARIABLE = "AMAGO_AUTO_PRECISION"
"""Environment variable that pins what ``auto`` resolves to (``no``, ``fp16`` or ``bf16``) without measuring: one
precision for a cluster's runs whatever node they land on, or for a test suite whatever machine it runs on."""

RECORDED_CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_fp16")
"""The CPU flags a run's provenance records: the ones that decide how fast its matmuls are in each precision."""

NATIVE_CPU_FLAGS: dict[Precision, frozenset[str]] = {
    # amx_tile alone is AMX's register file; the bf16 tile multiply is amx_bf16 (every AMX CPU so far has both).
    # aarch64 Linux lists its BF16 and FP16 arithmetic as `bf16` and `fphp` in `Features`.
    "bf16": frozenset({"avx512_bf16", "amx_bf16", "bf16"}),
    "fp16": frozenset({"avx512_fp16", "amx_fp16", "fphp"}),
}
"""Any one of these flags means the CPU computes that precision natively."""

CPUINFO = Path("/proc/cpuinfo")

_MATMUL_SIZE = 128
"""Side of the square matmul timed: ~0.05 ms in fp32 on two AVX2 cores, ~1.5 ms emulated in bf16."""


def parse_cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The flags of the first processor in ``/proc/cpuinfo`` text (x86's ``flags``, aarch64's ``Features``),
    lower-case; empty when the text lists none."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("flags", "features"):
            return frozenset(flag.lower() for flag in value.split())
    return frozenset()


@functools.cache
def cpu_flags() -> frozenset[str]:
    """This machine's CPU flags, read once per process (empty where ``/proc/cpuinfo`` is not: not Linux)."""
    try:
        return parse_cpu_flags(CPUINFO.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return frozenset()


def recorded_cpu_flags(flags: frozenset[str] | None = None) -> dict[str, bool]:
    """Which of :data:`RECORDED_CPU_FLAGS` the CPU has (``flags``: this machine's when None)."""
    flags = cpu_flags() if flags is None else flags
    return {flag: flag in flags for flag in RECORDED_CPU_FLAGS}


def cpu_native(precision: Precision, flags: frozenset[str] | None = None) -> bool:
    """Whether a CPU with ``flags`` (this machine's when None) computes ``precision`` natively (fp32 always)."""
    if precision == "no":
        return True
    flags = cpu_flags() if flags is None else flags
    return bool(NATIVE_CPU_FLAGS[precision] & flags)


def native_bf16(device_type: str) -> bool:
    """Whether the device type a run trains on computes bf16 natively.

    Args:
        device_type: ``cuda`` (the current GPU: torch's bf16 support without emulation, Ampere and newer) or
            ``cpu`` (avx512_bf16 or AMX); any other device counts as not native, so ``auto`` stays fp32 there.
    """
    if device_type == "cuda":
        import torch

        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False))
    if device_type == "cpu":
        return cpu_native("bf16")
    return False


@functools.cache
def cpu_slowdown(precision: Precision) -> float:
    """How many times slower a small matmul is in ``precision`` than in fp32 on this CPU (once per process).

    The best of three timings of a 128×128 matmul each way, on one thread: a multi-threaded fp32 matmul on a busy
    machine waits for cores others hold while the emulated one does not, which would turn the ratio upside down.
    """
    if precision == "no":
        return 1.0
    import torch

    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(_MATMUL_SIZE, _MATMUL_SIZE, generator=generator)
    b = torch.randn(_MATMUL_SIZE, _MATMUL_SIZE, generator=generator)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        fp32 = _best_time(a, b)
        reduced = _best_time(a.to(dtype), b.to(dtype))
    finally:
        torch.set_num_threads(threads)
    return reduced / max(fp32, 1e-9)


def _best_time(a: Any, b: Any, repeats: int = 3) -> float:
    import torch

    torch.mm(a, b)  # the first call picks the kernel and allocates: not what a training step pays
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return best


BF16_MARGIN = 0.95
"""A phase takes bf16 only where it timed below this share of fp32's time: the start's medians of three calls move
by a few percent on a busy machine, and a tie goes to fp32 (AMAGO's precision, and the more accurate one)."""


@dataclass(frozen=True)
class PhaseTimes:
    """What a policy step and an update took at start in fp32 and in bf16 (seconds, medians; the update's None
    in a process that does not train: evaluation, collection)."""

    step_fp32: float
    step_bf16: float
    update_fp32: float | None = None
    update_bf16: float | None = None

    @property
    def update_faster_in_bf16(self) -> bool:
        """Whether a bf16 update measured clearly faster than an fp32 one (False: not timed)."""
        return (
            self.update_fp32 is not None
            and self.update_bf16 is not None
            and self.update_bf16 < BF16_MARGIN * self.update_fp32
        )

    @property
    def step_faster_in_bf16(self) -> bool:
        """Whether a bf16 policy step measured clearly faster than an fp32 one."""
        return self.step_bf16 < BF16_MARGIN * self.step_fp32

    def record(self) -> dict[str, dict[str, float]]:
        """Milliseconds, as the provenance keeps them."""
        entry = {"policy_step_ms": {"no": _ms(self.step_fp32), "bf16": _ms(self.step_bf16)}}
        if self.update_fp32 is not None and self.update_bf16 is not None:
            entry["update_ms"] = {"no": _ms(self.update_fp32), "bf16": _ms(self.update_bf16)}
        return entry


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _shown(precision: str) -> str:
    return "fp32" if precision == "no" else precision


@dataclass(frozen=True)
class PrecisionChoice:
    """The precision a run trains and acts in, and why.

    Attributes:
        requested: ``optim.mixed_precision`` as configured (``auto``, ``no``, ``fp16`` or ``bf16``); what the run
            records.
        used: what the update's forward autocasts to (``no``: fp32).
        device: the device type the run trains on (``cuda`` or ``cpu``).
        native: whether ``device`` computes ``used`` natively (fp32 always).
        reason: how ``used`` was chosen, in a few words (the summary and the provenance show it).
        rollout: what the policy's forward autocasts to when it acts.
        slowdown: on a CPU without native ``used``: the measured matmul slowdown against fp32; else None.
        resumed: whether the run resumes a recorded run whose record holds a precision, which it keeps.
        pending: ``auto`` on a device with native bf16, before the start measured the phases
            (:meth:`decided` settles it).
        times: what the start measured (None: nothing was).
    """

    requested: str
    used: Precision
    device: str
    native: bool
    reason: str
    rollout: Precision = "no"
    slowdown: float | None = None
    resumed: bool = False
    pending: bool = False
    times: PhaseTimes | None = None

    def decided(self, times: PhaseTimes) -> PrecisionChoice:
        """The choice once the start measured both phases: each takes bf16 only where it was clearly faster
        (:data:`BF16_MARGIN`)."""
        update: Precision = "bf16" if times.update_faster_in_bf16 else "no"
        rollout: Precision = "bf16" if times.step_faster_in_bf16 else "no"
        return replace(
            self,
            used=update,
            rollout=rollout,
            native=True,
            pending=False,
            times=times,
            reason=f"{self.reason}, timed",
        )

    def record(self) -> dict[str, Any]:
        """The run's provenance entry (JSON-safe)."""
        entry: dict[str, Any] = {
            "requested": self.requested,
            "used": self.used,
            "rollout": self.rollout,
            "device": self.device,
            "native": self.native,
            "reason": self.reason,
        }
        if self.slowdown is not None:
            entry["measured_slowdown_vs_fp32"] = round(self.slowdown, 1)
        if self.times is not None:
            entry |= self.times.record()
        return entry

    def describe(self) -> str:
        """The decision in one phrase (the start's summary line): each phase's precision, why, and the times."""
        text = f"update {_shown(self.used)}, rollouts {_shown(self.rollout)} ({self.reason}"
        times = self.times
        if times is not None:
            text += ": "
            if times.update_fp32 is not None and times.update_bf16 is not None:
                text += f"update {times.update_bf16 * 1000:.1f} ms bf16 vs {times.update_fp32 * 1000:.1f} ms fp32, "
            text += (
                f"policy step {times.step_bf16 * 1000:.2f} ms bf16 vs {times.step_fp32 * 1000:.2f} ms fp32"
            )
        return text + ")"

    def warning(self) -> str | None:
        """One line when the run trains in a precision its CPU emulates (None otherwise)."""
        if self.slowdown is None:
            return None
        flags = "avx512_bf16 or AMX" if self.used == "bf16" else "avx512_fp16 or AMX-FP16"
        cost = (
            f"optim.mixed_precision={self.used} on a CPU without native {self.used} (no {flags}): a {self.used} "
            f"matmul measured ~{self.slowdown:.0f}x slower than fp32 here"
        )
        if self.resumed:
            return (
                f"{cost}; this run was trained in {self.used} and a resume keeps it: start a new run with "
                "optim.mixed_precision=auto (or no) to train in fp32 here."
            )
        return f"{cost}; set optim.mixed_precision=auto (or no) to train in fp32."

    def resume_note(self, before: Mapping[str, Any] | None) -> str | None:
        """One line when ``auto`` resolved otherwise on this resume than on the run's previous start (None: the
        same, or nothing recorded). ``before``: the previous start's provenance entry (:meth:`record`)."""
        if self.requested != "auto" or not before or self.pending:
            return None
        was = (before.get("used"), before.get("rollout", "no"))
        if was == (self.used, self.rollout):
            return None
        return (
            f"optim.mixed_precision=auto resolved again on this machine: update {_shown(self.used)}, rollouts "
            f"{_shown(self.rollout)} (the run trained with update {_shown(str(was[0]))}, rollouts "
            f"{_shown(str(was[1]))} before; {self.reason})."
        )


ONEDNN_CACHE_LIMITS = {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "64", "LRU_CACHE_CAPACITY": "16"}
"""oneDNN's caches of built kernels, bounded for bf16 on a CPU. oneDNN keeps a kernel per matrix shape, and
training batches change shape every update, so with the defaults a bf16 run's memory grew ~30 MB per update.
These limits kept it below fp32's at the same updates/s; 0/1 also bounds it but ran ~11 % slower."""


def bound_onednn_caches(device_type: str, precisions: set[str]) -> None:
    """Caps oneDNN's kernel caches (:data:`ONEDNN_CACHE_LIMITS`, unless the user set them) when a run on
    ``device_type`` may compute in one of ``precisions`` other than fp32 on a CPU. oneDNN reads them at its first
    reduced-precision kernel: :func:`choose_precision` calls this before anything runs."""
    if device_type == "cpu" and precisions - {"no"}:
        for name, value in ONEDNN_CACHE_LIMITS.items():
            os.environ.setdefault(name, value)


def explicit_rollout(precision: Precision, device_type: str) -> Precision:
    """The rollouts of a run that asked for ``precision``: autocast on a GPU; fp32 on a CPU, where a rollout steps
    one small batch at a time and the casts cost more than reduced-precision matmuls save (GRU collection measured
    16.3k -> 10.4k env steps/s in emulated bf16)."""
    return precision if device_type == "cuda" else "no"


def choose_precision(requested: str, device_type: str, *, saved: Precision | None = None) -> PrecisionChoice:
    """Resolves ``optim.mixed_precision`` for a run that trains on ``device_type``.

    Args:
        requested: the configured value: ``auto`` (fp32 where ``device_type`` has no native bf16; else pending:
            the start measures both phases, see :meth:`PrecisionChoice.decided`; :data:`AUTO_VARIABLE` pins it),
            or ``no``, ``fp16``, ``bf16`` (used as asked).
        device_type: ``cuda`` or ``cpu``.
        saved: the precision a resumed run's record holds, from before records kept ``auto``: ``auto`` keeps it,
            so that such a state is never silently continued in another precision.

    Returns:
        The choice; its ``slowdown`` is measured (once per process) only when a CPU would emulate ``used``.

    Raises:
        ValueError: ``requested`` or the pinned value is not a precision.
    """
    pending = False
    if requested == "auto":
        pinned = os.environ.get(AUTO_VARIABLE, "").strip()
        if saved is not None:
            used: Precision = saved
            reason = "auto: kept from the resumed run's record"
        elif pinned:
            if pinned not in PRECISIONS:
                msg = (
                    f"{AUTO_VARIABLE}={pinned!r} is not a precision; set it to no, fp16 or bf16, or unset it."
                )
                raise ValueError(msg)
            used, reason = pinned, f"auto: pinned by {AUTO_VARIABLE}"
        elif native_bf16(device_type):
            used, reason, pending = "bf16", f"auto: native bf16 on {device_type}", True
        else:
            used, reason = "no", f"auto: no native bf16 on {device_type}"
    elif requested in PRECISIONS:
        used, reason = requested, "asked for"
    else:
        msg = f"optim.mixed_precision={requested!r} is not a precision; set it to auto, no, fp16 or bf16."
        raise ValueError(msg)
    if used == "bf16":
        native = native_bf16(device_type)
    elif used == "fp16":
        native = device_type == "cuda" or (device_type == "cpu" and cpu_native("fp16"))
    else:
        native = True
    bound_onednn_caches(device_type, {used})  # before the timed matmul below, and the probe's
    slowdown = cpu_slowdown(used) if device_type == "cpu" and not native else None
    return PrecisionChoice(
        requested=requested,
        used=used,
        device=device_type,
        native=native,
        reason=reason,
        rollout=explicit_rollout(used, device_type),
        slowdown=slowdown,
        resumed=saved is not None,
        pending=pending,
    )
