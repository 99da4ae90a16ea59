"""Shared setup of the precision matrix: one torch thread, a fresh accelerate state per test, and a CPU whose
flags are faked, so that no case depends on the machine it runs on."""

from __future__ import annotations

import pytest
import torch

torch.set_num_threads(1)

EMULATING_CPU = frozenset({"fpu", "sse2", "avx", "avx2", "fma", "f16c"})
"""An AVX2-only CPU: neither bf16 nor fp16 native, the case where an asked-for precision is emulated."""


@pytest.fixture(autouse=True)
def _fresh_accelerate_state():
    """accelerate keeps one process-wide state whose precision cannot change once set: each case starts and
    leaves it unset, as a new process would."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


@pytest.fixture(autouse=True)
def _pinned_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU's flags and its measured emulation cost are fixed values: a run that asks for bf16 or fp16 gets
    it on any machine, and no case times a matmul or reads /proc/cpuinfo (only ``auto`` would act on them)."""
    from amago_core.experiment import hardware

    monkeypatch.setattr(hardware, "cpu_flags", lambda: EMULATING_CPU)
    monkeypatch.setattr(hardware, "cpu_slowdown", lambda precision: 1.0 if precision == "no" else 30.0)
