"""A deterministic stand-in for ``torch.nn.functional.gumbel_softmax``, shared by both sides of the agents' parity
cases (``tests/parity/agents_cases.py``, ``bench/agents_amago_ref.py``).

Discrete actions treated like continuous ones are reparameterised by straight-through Gumbel-softmax samples
(AMAGO's ``DiscreteLikeContinuous.rsample``, amago's ``ClippedCategorical.gumbel_rsample``); both call
``F.gumbel_softmax``. As in ``bench/parity_noise.py``, the Gumbel noise becomes a function of what it perturbs:
``0.5 · tanh(log p)``, increasing in ``log p``, so the hard sample is the policy's mode (the one-hot that the
harness's patched plain samples also return) while the soft sample, and so the gradient, still depends on the
temperature and on every probability. Torch only: the AMAGO side imports it too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


def gumbel_softmax(
    logits: torch.Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> torch.Tensor:
    """``F.gumbel_softmax`` with the deterministic noise described above (``eps`` is unused, as in torch)."""
    del eps
    log_p = logits.detach().log_softmax(dim)
    noise = 0.5 * torch.tanh(log_p)
    soft = ((logits + noise) / tau).softmax(dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = torch.zeros_like(logits).scatter_(dim, index, 1.0)
    return one_hot - soft.detach() + soft


@contextlib.contextmanager
def deterministic_gumbel() -> Iterator[None]:
    """``torch.nn.functional.gumbel_softmax`` replaced by :func:`gumbel_softmax` inside the block."""
    functional = torch.nn.functional
    saved = functional.gumbel_softmax
    functional.gumbel_softmax = gumbel_softmax
    try:
        yield
    finally:
        functional.gumbel_softmax = saved
