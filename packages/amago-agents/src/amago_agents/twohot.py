"""Value bins of the classification critic: symlog/symexp, two-hot and HL-Gauss labels, expected values."""

from __future__ import annotations

import math

import torch
from torch import nn


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) · log(|x| + 1)``."""
    return torch.sign(x) * torch.log1p(x.abs())


def symexp(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) · (exp(|x|) - 1)``: the inverse of :func:`symlog`."""
    return torch.sign(x) * torch.expm1(x.abs())


INIT_WIDTH_BINS = 4.0
"""Standard deviation, in bins, of the bump :meth:`ValueBins.init_logits` starts a critic with (AMAGO's)."""

INIT_EDGE_BINS = 12
"""A ``critic_init_value`` whose nearest bin is closer than this to an edge gets a warning: the bump (3 standard
deviations) is cut off there, so the first prediction leans inward (AMAGO warns at the same distance)."""


class ValueBins(nn.Module):
    """``num_bins`` bin centres uniform in symlog space (or raw space) over ``[min_return, max_return]``.

    Values map to labels (a distribution over bins) and distributions back to values; for two-hot labels of a
    value inside the range, :meth:`to_values` of :meth:`to_labels` returns the value itself.

    Args:
        min_return: lowest value covered (reward-multiplied units).
        max_return: highest value covered.
        num_bins: number of bins (at least 2).
        use_symlog: bins uniform in symlog space (else uniform in raw units).
        label_type: ``twohot`` or ``hlgauss``.
        hlgauss_sigma: HL-Gauss label standard deviation in bin widths.
    """

    centres: torch.Tensor

    def __init__(
        self,
        min_return: float,
        max_return: float,
        num_bins: int,
        *,
        use_symlog: bool = True,
        label_type: str = "twohot",
        hlgauss_sigma: float = 0.75,
    ) -> None:
        super().__init__()
        self.use_symlog = use_symlog
        self.label_type = label_type
        self.num_bins = num_bins
        low, high = (symlog(torch.tensor(v, dtype=torch.float64)).item() for v in (min_return, max_return))
        if not use_symlog:
            low, high = float(min_return), float(max_return)
        self.low, self.high = low, high
        self.width = (high - low) / (num_bins - 1)
        self.hlgauss_sigma = hlgauss_sigma * self.width
        # Derived from the config, so not saved with the checkpoint (persistent=False).
        self.register_buffer("centres", torch.linspace(low, high, num_bins), persistent=False)

    def _squash(self, values: torch.Tensor) -> torch.Tensor:
        return symlog(values) if self.use_symlog else values

    def _unsquash(self, values: torch.Tensor) -> torch.Tensor:
        return symexp(values) if self.use_symlog else values

    def to_labels(self, values: torch.Tensor) -> torch.Tensor:
        """Labels ``(..., num_bins)`` for values ``(...)`` (clamped into the covered range; NaN gives NaN labels,
        so a broken target shows up in the loss instead of as a silent label)."""
        x = self._squash(values.float()).clamp(self.low, self.high)
        missing = torch.isnan(x)
        labels = self._labels(torch.where(missing, torch.full_like(x, self.low), x))
        return labels.masked_fill(missing.unsqueeze(-1), float("nan"))

    def _labels(self, x: torch.Tensor) -> torch.Tensor:
        if self.label_type == "hlgauss":
            edges = torch.cat(
                (self.centres - self.width / 2, self.centres[-1:] + self.width / 2)
            )  # (num_bins + 1,)
            cdf = torch.special.erf((edges - x.unsqueeze(-1)) / (math.sqrt(2.0) * self.hlgauss_sigma))
            mass = (cdf[..., 1:] - cdf[..., :-1]).clamp_min(0.0)
            return mass / mass.sum(-1, keepdim=True).clamp_min(1e-12)
        position = (x - self.low) / self.width
        lower = position.floor().clamp(0, self.num_bins - 2)
        upper_share = (position - lower).clamp(0.0, 1.0)
        labels = torch.zeros(*x.shape, self.num_bins, dtype=x.dtype, device=x.device)
        lower_idx = lower.long().unsqueeze(-1)
        labels.scatter_(-1, lower_idx, (1.0 - upper_share).unsqueeze(-1))
        labels.scatter_(-1, lower_idx + 1, upper_share.unsqueeze(-1))
        return labels

    def to_values(self, probs: torch.Tensor) -> torch.Tensor:
        """Expected value of bin probabilities ``(..., num_bins)``: the mean is taken in symlog space, then
        symexp'd, as in DreamerV3 and AMAGO. Returns ``(...)``."""
        return self._unsquash((probs * self.centres).sum(-1))

    def logits_to_values(self, logits: torch.Tensor) -> torch.Tensor:
        """:meth:`to_values` of ``softmax(logits)``."""
        return self.to_values(logits.softmax(-1))

    def nearest_bin(self, value: float) -> int:
        """Index of the bin centre closest to ``value`` (raw units)."""
        squashed = self._squash(torch.tensor(float(value), dtype=self.centres.dtype))
        return int((self.centres - squashed).abs().argmin())

    def bins_from_edge(self, value: float) -> int:
        """How many bins lie between ``value``'s nearest bin and the closer end of the range."""
        index = self.nearest_bin(value)
        return min(index, self.num_bins - 1 - index)

    def init_logits(self, value: float, width_in_bins: float = INIT_WIDTH_BINS) -> torch.Tensor:
        """Logits ``(num_bins,)`` of a Gaussian bump centred on ``value`` (raw units; the bump is Gaussian in the
        bins' space) with a standard deviation of ``width_in_bins`` bins: a critic whose output bias holds them
        starts predicting about ``value`` (AMAGO's ``NCriticsTwoHot`` initialisation)."""
        centre = self._squash(torch.tensor(float(value), dtype=self.centres.dtype))
        # The width is the spacing of the centres as stored (float32), as the bins the critic is read with.
        sigma = width_in_bins * (self.centres[1] - self.centres[0])
        return -(self.centres - centre).pow(2) / (2.0 * sigma.pow(2))
