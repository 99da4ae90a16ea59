"""Keeps torch's compiler stack (``torch._dynamo``, ~1.5 s to import) out of runs that never compile, and holds
``run.compile``'s parts: the one place that calls ``torch.compile``, and the fallback to eager code.

torch wraps the optimiser's methods in ``torch._disable_dynamo``, which imports ``torch._dynamo`` on their first
call only to mark them "do not trace". A run that never compiles gives the mark up front (each wrapped function
recorded as its own "disabled" version, where torch's wrapper caches it), so the import never happens. Once
something has imported ``torch._dynamo``, this does nothing and torch behaves as it intends.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable
from types import FunctionType, ModuleType
from typing import Any, Literal

import torch

CACHE_ATTRIBUTE = "__dynamo_disable"
"""Where ``torch._compile._disable_dynamo``'s wrapper caches the disabled version of the function it wraps."""


def _wrapped_functions(module: ModuleType) -> list[FunctionType]:
    """Python functions that something in ``module`` (or one of its classes) wraps with ``functools.wraps``."""
    owners: list[object] = [module, *(v for v in vars(module).values() if isinstance(v, type))]
    wrapped = (
        getattr(value, "__wrapped__", None) for owner in owners for value in list(vars(owner).values())
    )
    return [function for function in wrapped if isinstance(function, FunctionType)]


def skip_dynamo_import() -> int:
    """Marks the dynamo-disabled functions of ``torch.optim`` so that calling them imports nothing.

    Returns:
        How many functions were marked (0 when ``torch._dynamo`` is already imported, or when torch's internals
        no longer look as expected: then the first optimiser call imports it, as torch intends).
    """
    if "torch._dynamo" in sys.modules:
        return 0
    try:
        import torch._compile

        if torch._compile._disable_dynamo(lambda: None).__code__.co_name != "inner":
            return 0  # the wrapper changed shape; leave it alone
        modules = [
            m for name, m in list(sys.modules.items()) if name.startswith("torch.optim") and m is not None
        ]
        functions = [function for module in modules for function in _wrapped_functions(module)]
        for function in functions:
            setattr(function, CACHE_ATTRIBUTE, function)
        return len(functions)
    except Exception:  # torch changed in a way this does not know: fall back to torch's own behaviour
        return 0


def untraced_adamw(params: Iterable[torch.nn.Parameter], lr: float, weight_decay: float) -> torch.optim.AdamW:
    """``torch.optim.AdamW`` whose ``step`` runs without torch's per-step compiler bookkeeping.

    torch wraps every optimiser ``step`` so that, under ``torch.compile``, the update sits behind a graph break;
    the wrapper imports ``torch._dynamo`` on the first step. Outside compilation it only disables gradients, so
    that is all this step does before running AdamW's own update (the same arithmetic, bit for bit).
    """
    return _UntracedAdamW(params, lr=lr, weight_decay=weight_decay)


class _UntracedAdamW(torch.optim.AdamW):
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        return untraced_adamw_step(self, closure)


def untraced_adamw_step(
    optimizer: torch.optim.AdamW, closure: Callable[[], float] | None = None
) -> float | None:
    """One ``torch.optim.AdamW`` update of ``optimizer`` (an AdamW or a subclass), without the compiler
    bookkeeping of AdamW's wrapped ``step`` when nothing has imported ``torch._dynamo``.

    For subclasses that change what happens around AdamW's update (``AdamWRel``): calling this from their own
    ``step`` keeps the saving without going through a second profiler/step-hook wrapper.
    """
    if "torch._dynamo" in sys.modules or optimizer.defaults.get("differentiable"):
        return torch.optim.AdamW.step(optimizer, closure)  # torch's own path: compiled code may call us
    with torch.no_grad():
        return _RAW_ADAMW_STEP(optimizer, closure)


_RAW_ADAMW_STEP = inspect.unwrap(torch.optim.AdamW.step)
"""AdamW's update without torch's wrappers (the profiler hook wraps ``_UntracedAdamW.step`` itself)."""


_MMAP_THRESHOLD, _TRIM_THRESHOLD, _TOP_PAD = -3, -1, -2  # glibc's mallopt parameter numbers (malloc.h)
_KEEP_BYTES = 256 * 2**20
_MMAP_LIMIT = 32 * 2**20  # glibc's largest allowed M_MMAP_THRESHOLD on 64-bit systems


def tune_allocator() -> bool:
    """Keeps freed tensor memory in glibc's heap for reuse instead of handing it back to the OS.

    A training step allocates and frees many activation tensors of a few to ~30 MB, which glibc serves with a
    fresh ``mmap`` each and unmaps on free, so every step pays page faults on all of it again (~15 % of an
    update). Raising the mmap and trim thresholds (``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_``) lets the
    heap reuse them.

    Returns:
        Whether the allocator was tuned (only glibc, and only when no ``MALLOC_*`` variable says otherwise).
    """
    import ctypes
    import ctypes.util
    import os
    import platform

    if platform.libc_ver()[0] != "glibc" or any(name.startswith("MALLOC_") for name in os.environ):
        return False
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    try:
        libc = ctypes.CDLL(libc_name)
        return all(
            libc.mallopt(parameter, value) == 1
            for parameter, value in (
                (_MMAP_THRESHOLD, _MMAP_LIMIT),
                (_TRIM_THRESHOLD, _KEEP_BYTES),
                (_TOP_PAD, _KEEP_BYTES),
            )
        )
    except (OSError, AttributeError):
        return False


def compile_wanted(setting: str, device: torch.device, part: Literal["update", "rollout"]) -> bool:
    """Whether ``run.compile`` (``auto`` / ``on`` / ``off``) compiles ``part`` on ``device``.

    ``auto`` compiles the update on CUDA only (launch-bound small kernels, which inductor fuses), and never the
    rollout step. On a CPU compiling costs 5-240 s per part and model and the compiled update ran 0.7-1.7x as
    fast as eager (``bench/compile_speed.py``), which a short run never earns back; the Transformer's rollout
    step recompiles as its KV cache grows and ran 16-28x slower than eager on any device.
    """
    if setting == "auto":
        return part == "update" and device.type == "cuda"
    return setting == "on"


def compile_function(function: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile(function)``: the one place compilation happens, so tests can put a failing compiler here."""
    return torch.compile(function)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def warn_eager(what: str, error: BaseException) -> None:
    """The one line said when compiling ``what`` failed (``error``) and it runs eagerly from then on."""
    print(
        f"run.compile: compiling the {what} failed ({_first_line(error)}); running it eagerly instead "
        "(set run.compile=off to skip the attempt)",
        file=sys.stderr,
        flush=True,
    )


class CompiledOrEager:
    """``function`` compiled on first use, and eager for good from the first call that compilation breaks.

    A call that raises under compilation (no C++ compiler, an op inductor cannot lower, a dynamo error: AMAGO#83's
    kind of failure) is run again eagerly with the same arguments, so no step is lost. The one-line warning is said
    only once that eager call succeeded: an error eager code raises too is the caller's own, and propagates as it
    would without compilation.

    Args:
        function: what to compile (a function or a module's bound method).
        what: how the warning names it ("rollout policy step").
    """

    def __init__(self, function: Callable[..., Any], what: str) -> None:
        self.eager = function
        self.what = what
        self.compiled: Callable[..., Any] | None = None
        self.failure: str | None = None
        """The failure's first line once compilation failed (then every call is eager)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.failure is not None:
            return self.eager(*args, **kwargs)
        try:
            if self.compiled is None:
                self.compiled = compile_function(self.eager)
            return self.compiled(*args, **kwargs)
        except Exception as error:  # any compiler failure: the eager call below decides whether it was ours
            result = self.eager(*args, **kwargs)
            self.failure = _first_line(error)
            warn_eager(self.what, error)
            return result
