"""What the experiment loop asks of an agent plugin: the methods it calls, and nothing about how they work.

An ``amago.agents`` factory returns a ``torch.nn.Module`` with these methods (amago-agents' ``Agent`` and
``MultiTaskAgent`` do). Its ``forward(batch, log_step=...)`` returns ``(loss, metrics)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch


@runtime_checkable
class RolloutPolicy(Protocol):
    """Acting: a memory state per env row, actions one step at a time, per-row resets."""

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> Any:
        """The memory of ``batch_size`` fresh episodes."""
        ...

    def reset_hidden_state(self, hidden_state: Any, dones: np.ndarray | torch.Tensor) -> Any:
        """The memory with the rows whose episode ended (``dones``) reset."""
        ...

    def get_actions(
        self,
        obs: dict[str, torch.Tensor],
        rl2s: torch.Tensor,
        time_idxs: torch.Tensor,
        hidden_state: Any = None,
        sample: bool = True,
    ) -> tuple[torch.Tensor, Any]:
        """Actions ``(N, 1, ...)`` for one step of ``N`` rows, and the memory after it."""
        ...

    def eval(self) -> Any:
        """Evaluation mode (``torch.nn.Module.eval``)."""
        ...


@runtime_checkable
class Trainable(Protocol):
    """A module that names what the optimiser updates (others train all their ``parameters()``)."""

    def trainable_parameters(self) -> Iterator[torch.nn.Parameter]:
        """What the optimiser updates (not the target copies)."""
        ...


@runtime_checkable
class ReportsGradNorms(Protocol):
    """An agent that adds its gradient norms (per part) to the logged training metrics (amago-agents' do)."""

    def grad_norms(self) -> dict[str, float]:
        """``{"Actor Grad Norm": ..., ...}`` after the backward pass of a logged step."""
        ...


@runtime_checkable
class ReloadAware(Protocol):
    """An agent told when checkpoint weights were loaded into it (to rebuild caches derived from them)."""

    def on_checkpoint_loaded(self, is_accelerate_state: bool) -> None:
        """Called after loading; ``is_accelerate_state``: a whole training state, not only the weights."""
        ...


@runtime_checkable
class LearningAgent(RolloutPolicy, Trainable, Protocol):
    """Learning: the parameters the optimiser updates, and the target networks moved after each update."""

    def soft_sync_targets(self) -> None:
        """Moves the target networks once per optimiser update."""
        ...
