"""Keeps torch's compiler stack (``torch._dynamo``, ~1.5 s to import here) out of runs that never compile.

The optimiser's methods (``__init__`` via ``add_param_group``, ``zero_grad``, the Adam kernels, ``state_dict``...)
are wrapped by torch in ``torch._disable_dynamo``, which imports ``torch._dynamo`` on their first call only to
mark them "do not trace". A run that never calls ``torch.compile`` has nothing to hide them from, so the mark is
given up front: each wrapped function is recorded as its own "disabled" version (the attribute torch's wrapper
caches it under), and the import never happens. Once something has imported ``torch._dynamo`` (a flex-attention
encoder, a plugin that compiles), this does nothing and torch behaves as it intends.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable
from types import FunctionType, ModuleType

import torch

CACHE_ATTRIBUTE = "__dynamo_disable"
"""Where ``torch._compile._disable_dynamo``'s wrapper caches the disabled version of the function it wraps."""


def _wrapped_functions(module: ModuleType) -> list[FunctionType]:
    """Python functions that something in ``module`` (or one of its classes) wraps with ``functools.wraps``."""
    owners: list[object] = [module, *(v for v in vars(module).values() if isinstance(v, type))]
    found = []
    for owner in owners:
        for value in list(vars(owner).values()):
            wrapped = getattr(value, "__wrapped__", None)
            if isinstance(wrapped, FunctionType):
                found.append(wrapped)
    return found


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
        marked = 0
        for module in modules:
            for function in _wrapped_functions(module):
                setattr(function, CACHE_ATTRIBUTE, function)
                marked += 1
        return marked
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

    A training step allocates and frees many activation tensors of a few to ~30 MB. glibc serves each of those
    with a fresh ``mmap`` and unmaps it on free, so every step pays page faults on all of it again; on a virtual
    machine that measured ~15 % of a GRU or Transformer update. Raising the mmap and trim thresholds (what
    ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` would do) lets the heap reuse them.

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
