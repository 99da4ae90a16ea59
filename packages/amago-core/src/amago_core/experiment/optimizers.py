"""Optimisers ``optim.optimizer`` can choose besides torch's AdamW.

``AdamWRel`` is AdamW on "relative" time (Ellis et al., 2024, "Adam on Local Time: Addressing Nonstationarity in
RL with Relative Adam Timesteps"), AMAGO's ``amago.utils.AdamWRel``: RL's targets move, so training is treated as
a sequence of stationary problems, and Adam's step count (which only drives the bias correction) restarts at
every stage while the moment estimates carry on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

from amago_core.config.experiment import OptimSection
from amago_core.experiment.agent_api import Trainable
from amago_core.experiment.fast_torch import untraced_adamw, untraced_adamw_step

GLOBAL_STEP_KEY = "amago_global_step"
"""Where :class:`AdamWRel` keeps its update count in its state dict (so a resumed run resets on schedule)."""


class AdamWRel(torch.optim.AdamW):
    """AdamW whose per-parameter step count returns to 0 after every ``reset_interval`` updates.

    The moments (``exp_avg``, ``exp_avg_sq``) are kept, so the update right after a reset has the bias
    correction of a first step: ``1 - beta ** 1`` instead of nearly 1, which makes it as large as Adam's first
    update on the running moments (the point of the method: each stage starts with a fresh step size). The
    reset comes after the update that completes a multiple of ``reset_interval`` updates, counted over every
    call to :meth:`step`, as AMAGO counts them.

    Args:
        reset_interval: updates between resets of the step count (at least 1); the rest are AdamW's.
    """

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter] | Iterable[dict[str, Any]],
        *,
        reset_interval: int,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        if isinstance(reset_interval, bool) or int(reset_interval) != reset_interval or reset_interval < 1:
            msg = f"AdamWRel: reset_interval must be a whole number of updates, at least 1 (got {reset_interval!r})."
            raise ValueError(msg)
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self.reset_interval = int(reset_interval)
        self.global_step = 0
        """Updates taken so far (every call to :meth:`step`); saved in the state dict."""

    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One AdamW update, then the step counts return to 0 if this update completes a reset interval."""
        loss = untraced_adamw_step(self, closure)
        self.global_step += 1
        if self.global_step % self.reset_interval == 0:
            self.reset_step_counts()
        return loss

    @torch.no_grad()
    def reset_step_counts(self) -> None:
        """Sets every parameter's step count to 0, in place (the counts may be tensors a compiled step holds)."""
        for state in self.state.values():
            count = state.get("step")
            if isinstance(count, torch.Tensor):
                count.zero_()
            elif count is not None:
                state["step"] = 0

    def state_dict(self) -> dict[str, Any]:
        """AdamW's state dict plus the update count (:data:`GLOBAL_STEP_KEY`)."""
        state = super().state_dict()
        state[GLOBAL_STEP_KEY] = self.global_step
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores AdamW's state and the update count (0 when the state came from plain AdamW)."""
        state = dict(state_dict)
        self.global_step = int(state.pop(GLOBAL_STEP_KEY, 0))
        super().load_state_dict(state)


def default_optimizer(policy: torch.nn.Module, optim: OptimSection) -> torch.optim.Optimizer:
    """``Experiment.init_optimizer``'s optimiser: ``optim.optimizer`` (AdamW or AdamWRel) over the agent's
    trainable parameters."""
    params = list(policy.trainable_parameters() if isinstance(policy, Trainable) else policy.parameters())
    if optim.optimizer == "adamw_rel":
        if optim.reset_interval is None:  # the config refuses this; a hand-built config may not have
            msg = "optim.optimizer=adamw_rel needs optim.reset_interval (optimiser steps between resets); set it."
            raise ValueError(msg)
        return AdamWRel(
            params, reset_interval=optim.reset_interval, lr=optim.learning_rate, weight_decay=optim.l2_coeff
        )
    # AdamW, minus torch's per-step compiler bookkeeping (which imports torch._dynamo: ~1.5 s per process).
    return untraced_adamw(params, lr=optim.learning_rate, weight_decay=optim.l2_coeff)
