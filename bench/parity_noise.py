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


class DecisionTape:
    """The discrete decisions of one update, in call order: recorded in an fp32 run, replayed in a bf16 one.

    A mode pick (argmax, ``logits > 0``) or the binary advantage filter (``A > 0``) of a value within bf16's error of
    the boundary flips with the rounding: the loss then jumps by a whole term, which measures luck, not precision
    (the multitask Discrete case's advantages are mostly ~1e-4 against bf16 errors of ~5e-3). A bf16 run replays
    the fp32 run's decisions, as the harness already fixes the noise, and counts how many it would have flipped.
    """

    def __init__(self) -> None:
        self.decisions: list[torch.Tensor] = []
        self.replaying = False
        self.position = 0
        self.flips = 0
        self.total = 0

    def decide(self, computed: torch.Tensor) -> torch.Tensor:
        """``computed`` when recording; the recorded decision in its place when replaying."""
        if not self.replaying:
            self.decisions.append(computed.detach().clone())
            return computed
        if self.position >= len(self.decisions) or self.decisions[self.position].shape != computed.shape:
            msg = "parity harness: the bf16 run made other decisions than the fp32 run it replays; same weights?"
            raise RuntimeError(msg)
        pinned = self.decisions[self.position]
        self.position += 1
        self.flips += int((pinned != computed).sum())
        self.total += pinned.numel()
        return pinned
