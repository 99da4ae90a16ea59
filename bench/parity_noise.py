"""The randomness both sides of the parity harness share (torch only: the AMAGO side imports it too).

A learning update draws noise in several places: reparameterised policy samples, target-policy samples and
REDQ's random critic subsets. The two libraries draw them in different orders and shapes (AMAGO samples a
policy for every observation, amago only for the ones a loss uses), so equal seeds would not give equal numbers.
The harness replaces every draw by a deterministic function of what the draw is *for*:

- Gaussian noise for a policy with mean ``loc`` is :func:`noise_for` ``(loc)``, so a state gets the same noise
  whichever library, call order or slice of the window asks for it;
- a mixture picks its most likely component, a Bernoulli and a categorical their modes;
- a random subset of ``critics`` indices of a given shape is :func:`indices_for` ``(shape, critics)``.

With the same weights, inputs and noise, any difference between the two sides is a difference in the math.
"""

from __future__ import annotations

import torch


def noise_for(loc: torch.Tensor) -> torch.Tensor:
    """Standard-normal-like noise determined by the policy mean (detached: noise carries no gradient).

    A slow function of ``loc``, so float-level differences between the libraries' means stay float-level.
    """
    return 1.5 * torch.sin(3.0 * loc.detach() + 1.0)


def indices_for(
    shape: tuple[int, ...], critics: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """A fixed pattern of critic indices in ``[0, critics)`` with every index used (not all the same)."""
    count = 1
    for size in shape:
        count *= int(size)
    flat = (torch.arange(count, device=device) * 7 + 3 + torch.arange(count, device=device) // 5) % critics
    return flat.reshape(shape)


def fake_randint(*args: object, **kwargs: object) -> torch.Tensor:
    """Stands in for ``torch.randint(low=0, high, size, ...)`` in either call style."""
    positional = list(args)
    high = kwargs.pop("high", None)
    size = kwargs.pop("size", None)
    low = kwargs.pop("low", 0)
    if high is None and size is None:
        high, size = positional[-2], positional[-1]
        if len(positional) == 3:
            low = positional[0]
    elif size is None:
        size = positional[-1]
    elif high is None:
        high = positional[-1]
    if low != 0:
        msg = f"parity harness: torch.randint with low={low} is not a REDQ draw; extend fake_randint."
        raise NotImplementedError(msg)
    device = kwargs.get("device")
    return indices_for(tuple(size), int(high), device=device)  # type: ignore[arg-type]
