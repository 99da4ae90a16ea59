"""``RealSteps``: run per-timestep heads on a batch's real transitions only, not on its padding.

Training windows are padded to the longest one in the batch; meta-episodes that end early (a lake's attempts
stop at holes) leave 40 % or more of a batch as padding. The actor and critic heads treat every timestep on
its own, so they can run on the real timesteps alone, gathered into one row, with their outputs scattered back
to the padded ``(B, T)`` layout (zeros at padding, which every loss masks out). The losses and gradients are
those of the padded computation up to float rounding; only the padded rows' work is skipped.
"""

from __future__ import annotations

import torch


class RealSteps:
    """The real transitions of a ``(B, T)`` batch, as flat indices into ``B * T``.

    Args:
        valid: ``(B, T)`` booleans, True where the transition is real.
    """

    def __init__(self, valid: torch.Tensor) -> None:
        self.batch, self.steps = valid.shape
        self.index = valid.reshape(-1).nonzero().squeeze(1)
        self.count = int(self.index.numel())

    @property
    def padded(self) -> bool:
        """Whether the batch has any padding (else gathering would only copy)."""
        return self.count < self.batch * self.steps

    def take(self, x: torch.Tensor, dim: int = 0) -> torch.Tensor:
        """``x`` with ``(B, T)`` at dims ``dim, dim + 1`` as ``(1, N)`` there: the N real timesteps as one row."""
        flat = x.reshape(*x.shape[:dim], self.batch * self.steps, *x.shape[dim + 2 :])
        return flat.index_select(dim, self.index).unsqueeze(dim)

    def put(self, x: torch.Tensor, dim: int = 0) -> torch.Tensor:
        """Inverse of :meth:`take`: ``(1, N)`` at ``dim`` back to ``(B, T)``, zeros at the padded timesteps."""
        rows = x.squeeze(dim)
        shape = (*rows.shape[:dim], self.batch * self.steps, *rows.shape[dim + 1 :])
        out = rows.new_zeros(shape).index_copy(dim, self.index, rows)
        return out.reshape(*rows.shape[:dim], self.batch, self.steps, *rows.shape[dim + 1 :])
