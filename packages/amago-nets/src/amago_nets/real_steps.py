"""``RealSteps``: run per-timestep work on a batch's real timesteps only, not on its padding.

Training windows are padded at the end to the longest one in the batch; meta-episodes that end early (a lake's
attempts stop at holes) leave 40 % or more of a batch as padding. Whatever treats each timestep on its own (the
actor and critic heads, an encoder's projections and feed-forward blocks) can run on the real timesteps alone,
gathered into one row, with the results scattered back to the padded ``(B, T)`` layout (zeros at padding,
which every loss masks out). Results at real timesteps are those of the padded computation up to float
rounding; only the padding's work is skipped.
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
        self.valid = valid
        self.index = valid.reshape(-1).nonzero().squeeze(1)
        self.count = int(self.index.numel())

    @classmethod
    def of_window(cls, pad_mask: torch.Tensor | None) -> RealSteps | None:
        """The real steps of a training window, for sequence models; None when gathering would not pay or
        not be exact.

        Args:
            pad_mask: ``(B, L)`` True at padded timesteps, or None (no padding information).

        Returns:
            None when there is no padding, or when a real step follows a padded one in some row: a causal
            model's outputs at real steps ignore padding only when all of it comes at the end of the row.
        """
        if pad_mask is None:
            return None
        real = ~pad_mask.bool()
        suffix_padding = bool((real[:, 1:] <= real[:, :-1]).all())
        if not suffix_padding:
            return None
        steps = cls(real)
        return steps if steps.padded else None

    @property
    def row_lengths(self) -> torch.Tensor:
        """``(B,)`` real steps per row (the row's length when its padding is a suffix)."""
        return self.valid.sum(1)

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
