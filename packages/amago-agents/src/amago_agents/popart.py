"""PopArt: per-gamma running statistics of the TD targets, updated so the critic's outputs are preserved."""

from __future__ import annotations

import torch
from torch import nn

from amago_agents.specs import PopArtConfig


class PopArt(nn.Module):
    """Normalises value targets per discount factor and keeps the critic's de-normalised outputs unchanged.

    The critic regresses ``w · Q + b`` onto ``(y - mu) / sigma``. When new targets move ``mu`` and ``sigma``,
    ``w`` and ``b`` are adjusted so that ``sigma · (w · Q + b) + mu`` is the same before and after the update
    (van Hasselt et al., 2016). Everything is a buffer: PopArt is not trained by gradient descent, and its
    statistics travel with the checkpoint.

    Args:
        num_gammas: one set of statistics per discount factor (G).
        config: step size, initial second moment, on/off.
    """

    mu: torch.Tensor
    nu: torch.Tensor
    w: torch.Tensor
    b: torch.Tensor
    updates: torch.Tensor

    def __init__(self, num_gammas: int, config: PopArtConfig | None = None) -> None:
        super().__init__()
        config = config or PopArtConfig()
        self.enabled = config.enabled
        self.beta = config.beta
        self.register_buffer("mu", torch.zeros(num_gammas, 1))
        self.register_buffer("nu", torch.full((num_gammas, 1), float(config.init_nu)))
        self.register_buffer("w", torch.ones(num_gammas, 1))
        self.register_buffer("b", torch.zeros(num_gammas, 1))
        self.register_buffer("updates", torch.zeros((), dtype=torch.long))

    @property
    def sigma(self) -> torch.Tensor:
        """``(G, 1)`` running standard deviation, kept away from 0 and infinity."""
        return (self.nu - self.mu.pow(2)).clamp(1e-4, 1e8).sqrt().clamp(1e-4, 1e6)

    def forward(self, x: torch.Tensor, normalized: bool = True) -> torch.Tensor:
        """``w · x + b`` (normalised space), or ``sigma · (w · x + b) + mu`` with ``normalized=False``.

        Args:
            x: critic outputs ``(..., G, 1)``.
            normalized: return normalised values (else raw, reward-multiplied returns).
        """
        if not self.enabled:
            return x
        out = self.w * x + self.b
        return out if normalized else self.sigma * out + self.mu

    def normalize_values(self, values: torch.Tensor) -> torch.Tensor:
        """``(values - mu) / sigma`` for raw values ``(..., G, 1)``."""
        if not self.enabled:
            return values
        return (values - self.mu) / self.sigma

    def denormalize_values(self, values: torch.Tensor) -> torch.Tensor:
        """``sigma · values + mu``: the inverse of :meth:`normalize_values`."""
        if not self.enabled:
            return values
        return self.sigma * values + self.mu

    @torch.no_grad()
    def update_stats(self, targets: torch.Tensor, mask: torch.Tensor) -> None:
        """Folds new targets into the statistics, then rescales ``w`` and ``b`` to preserve outputs.

        Args:
            targets: raw TD targets ``(..., G, 1)``.
            mask: booleans broadcastable to ``targets`` (False entries are ignored).
        """
        if not self.enabled:
            return
        weights = mask.to(targets.dtype).expand_as(targets)
        reduce_dims = tuple(range(targets.dim() - 2))
        count = weights.sum(reduce_dims)
        has_data = count > 0
        count = count.clamp_min(1.0)
        # where (not a product) so that garbage in masked entries cannot leak in as NaN * 0.
        real = torch.where(weights > 0, targets, torch.zeros_like(targets))
        mean = (real * weights).sum(reduce_dims) / count
        square_mean = (real.pow(2) * weights).sum(reduce_dims) / count
        # A gamma without real targets, or with a NaN/inf one (the agent's loss check reports it), keeps its old
        # statistics instead of being poisoned; torch.where avoids a device sync.
        finite = has_data & torch.isfinite(mean) & torch.isfinite(square_mean)
        self.updates += 1
        # Bias correction with the initial statistics counted as one earlier observation (AMAGO's counter starts
        # at 1): the first update mixes about half and half with mu = 0, nu = init_nu, which is what makes
        # init_nu keep the first normalised targets small. Counting from 0 would give beta_1 = 1 and discard it.
        # In float32 on the device, as AMAGO computes it: no host sync, and the same rounding (for beta = 5e-4 the
        # first steps' 1 - (1 - beta)^t loses about 1e-4 of relative precision to cancellation either way).
        beta_t = self.beta / (1.0 - (1.0 - self.beta) ** (self.updates + 1).to(self.mu.dtype))
        old_mu, old_sigma = self.mu.clone(), self.sigma
        self.mu.copy_(torch.where(finite, (1.0 - beta_t) * self.mu + beta_t * mean, self.mu))
        self.nu.copy_(torch.where(finite, (1.0 - beta_t) * self.nu + beta_t * square_mean, self.nu))
        new_sigma = self.sigma
        self.w.mul_(old_sigma / new_sigma)
        self.b.copy_((old_sigma * self.b + old_mu - self.mu) / new_sigma)
