"""AMAGO's network helpers that scripts call from their own ``TstepEncoder``s, with AMAGO's signatures.

AMAGO's examples 10 and 11 build their encoders from ``amago.nets.cnn.GridworldCNN(img_shape, channels_first,
activation, channels)`` (probing ``blank_img`` for the output size), ``amago.nets.ff.Normalization("layer", d)``,
``amago.nets.utils.symlog`` and ``add_activation_log(key, tensor, log_dict)``. The backbones are amago-nets' own
classes (same arguments, same layers) with AMAGO's ``blank_img``; the rest keeps AMAGO's keyword names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from amago_nets import cnn, layers

if TYPE_CHECKING:
    import torch
    from torch import nn


class _BlankImage:
    """AMAGO's ``blank_img``: a zero uint8 image batch of shape ``(1, 1) + img_shape``, to probe the output size."""

    img_shape: tuple[int, ...]

    @property
    def blank_img(self) -> torch.Tensor:
        """``torch.zeros((1, 1) + img_shape, dtype=torch.uint8)``."""
        import torch

        return torch.zeros((1, 1, *self.img_shape), dtype=torch.uint8)


class NatureishCNN(_BlankImage, cnn.NatureishCNN):
    """amago-nets' ``NatureishCNN`` (AMAGO's arguments) with AMAGO's ``blank_img``."""


class IMPALAishCNN(_BlankImage, cnn.IMPALAishCNN):
    """amago-nets' ``IMPALAishCNN`` (AMAGO's arguments) with AMAGO's ``blank_img``."""


class DrQCNN(_BlankImage, cnn.DrQCNN):
    """amago-nets' ``DrQCNN`` (AMAGO's arguments) with AMAGO's ``blank_img``."""


class GridworldCNN(_BlankImage, cnn.GridworldCNN):
    """amago-nets' ``GridworldCNN`` (AMAGO's arguments) with AMAGO's ``blank_img``."""


def Normalization(method: str | None, d_model: int) -> nn.Module:
    """AMAGO's ``Normalization(method, d_model)``: the normalisation module named ``method`` (``none``/None,
    ``layer``, ``rmsnorm``, ``unitball``, ``hypersphere``, ``simnorm``) for vectors of size ``d_model``."""
    return layers.normalization("none" if method is None else method, d_model)


def add_activation_log(
    root_key: str, activation: torch.Tensor, log_dict: dict[str, Any] | None = None
) -> None:
    """AMAGO's ``add_activation_log``: adds the mean, std, min and max of ``activation`` to ``log_dict`` under
    ``activation-{root_key}-...`` when a dict is given (amago calls ``inner_forward`` without one: a no-op then)."""
    if log_dict is None:
        return
    import torch

    with torch.no_grad():
        values = activation.detach().float()
        log_dict[f"activation-{root_key}-mean"] = values.mean().item()
        log_dict[f"activation-{root_key}-std"] = values.std().item() if values.numel() > 1 else 0.0
        log_dict[f"activation-{root_key}-min"] = values.min().item()
        log_dict[f"activation-{root_key}-max"] = values.max().item()


def symlog(x: torch.Tensor | float) -> torch.Tensor | float:
    """AMAGO's ``symlog``: ``sign(x) * log(|x| + 1)`` of a tensor, or of a float (a float back)."""
    import torch

    if isinstance(x, torch.Tensor):
        return layers.symlog(x)
    return float(layers.symlog(torch.tensor(float(x))))


__all__ = [
    "DrQCNN",
    "GridworldCNN",
    "IMPALAishCNN",
    "NatureishCNN",
    "Normalization",
    "add_activation_log",
    "symlog",
]
