"""AMAGO's image backbones (Nature-ish, DrQ-v2, gridworld, IMPALA-ish) and DrQ-v2 random-shift augmentation."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from amago_nets.layers import activation_module


def _delta_orthogonal_(module: nn.Module, gain: float) -> None:
    """Orthogonal init for Linear layers; for convs, an orthogonal centre tap and zeros elsewhere."""
    if isinstance(module, nn.Linear):
        nn.init.orthogonal_(module.weight, gain=gain)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Conv2d):
        weight = torch.zeros_like(module.weight)
        centre = torch.empty(module.weight.shape[:2])
        nn.init.orthogonal_(centre, gain=gain)
        weight[:, :, module.weight.shape[2] // 2, module.weight.shape[3] // 2] = centre
        with torch.no_grad():
            module.weight.copy_(weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


class ImageBackbone(nn.Module):
    """Folds (B, L) into the batch, runs ``conv_forward`` on (N, C, H, W) floats, unfolds and flattens.

    uint8 pixels are scaled to ``x / 128 - 1``; float images are assumed to be scaled already.

    Args:
        img_shape: shape of one image as stored in the observation.
        channels_first: whether that shape is (C, H, W) rather than (H, W, C).
    """

    def __init__(self, img_shape: tuple[int, ...], channels_first: bool) -> None:
        super().__init__()
        if len(img_shape) != 3:
            msg = f"image observations must be 3-d (H, W, C) or (C, H, W), got shape {tuple(img_shape)}."
            raise ValueError(msg)
        self.img_shape = tuple(img_shape)
        self.channels_first = channels_first
        self.in_channels = img_shape[0] if channels_first else img_shape[-1]

    def conv_forward(self, images: torch.Tensor) -> torch.Tensor:
        """(N, C, H, W) floats → (N, C', H', W') features."""
        raise NotImplementedError

    @staticmethod
    def to_float(images: torch.Tensor) -> torch.Tensor:
        """uint8 pixels → floats in [-1, 1); floats pass through."""
        return images.float() / 128.0 - 1.0 if images.dtype == torch.uint8 else images.float()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, L, *img_shape) → (B, L, features)."""
        batch, length = images.shape[:2]
        folded = self.to_float(images).reshape(batch * length, *self.img_shape)
        if not self.channels_first:
            folded = folded.permute(0, 3, 1, 2)
        return self.conv_forward(folded).reshape(batch, length, -1)

    def output_size(self) -> int:
        """Flattened feature size, probed with a blank image."""
        with torch.no_grad():
            return int(self(torch.zeros(1, 1, *self.img_shape, dtype=torch.uint8)).shape[-1])


class ConvStack(ImageBackbone):
    """Plain convolutions without padding, each followed by the activation (one module shared by all of them).

    The base of :class:`NatureishCNN`, :class:`DrQCNN` and :class:`GridworldCNN`: its parameters are those of
    one ``Sequential`` (``net.{2 i}`` is convolution ``i``, counting from 0), whatever the backbone.

    Args:
        img_shape: shape of one image as stored in the observation.
        channels_first: whether that shape is (C, H, W) rather than (H, W, C).
        activation: activation after every convolution.
        channels: output channels of each convolution.
        kernels: kernel size of each convolution (square kernels).
        strides: stride of each convolution.
        delta_orthogonal: start each kernel as an orthogonal centre tap (zeros elsewhere, zero biases), as AMAGO
            does for its Nature-ish and DrQ CNNs; False keeps torch's default init (AMAGO's gridworld CNN).

    Raises:
        ValueError: the three lists differ in length or hold a value below 1, or the image is too small for
            the convolutions.
    """

    def __init__(
        self,
        img_shape: tuple[int, ...],
        channels_first: bool,
        activation: str,
        channels: tuple[int, ...],
        kernels: tuple[int, ...],
        strides: tuple[int, ...],
        delta_orthogonal: bool,
    ) -> None:
        super().__init__(img_shape, channels_first)
        name = type(self).__name__
        if not channels or not len(channels) == len(kernels) == len(strides):
            msg = (
                f"{name}: channels {tuple(channels)}, kernels {tuple(kernels)} and strides {tuple(strides)} "
                "must be non-empty and of the same length (one entry per convolution)."
            )
            raise ValueError(msg)
        if min(*channels, *kernels, *strides) < 1:
            msg = (
                f"{name}: channels, kernels and strides must all be at least 1, got {tuple(channels)}, "
                f"{tuple(kernels)} and {tuple(strides)}."
            )
            raise ValueError(msg)
        height, width = self.img_shape[1:] if channels_first else self.img_shape[:2]
        for i, (kernel, stride) in enumerate(zip(kernels, strides, strict=True)):
            if min(height, width) < kernel:
                msg = (
                    f"{name}: the image {self.img_shape} is {height}x{width} before convolution {i + 1}, smaller "
                    f"than its {kernel}x{kernel} kernel; use larger images or smaller kernels and strides."
                )
                raise ValueError(msg)
            height, width = (height - kernel) // stride + 1, (width - kernel) // stride + 1
        layers: list[nn.Module] = []
        in_channels = self.in_channels
        # One activation module after every convolution, as AMAGO's CNN: a learnable one (``adaptive``) has
        # one set of coefficients per CNN.
        act = activation_module(activation)
        for out_channels, kernel, stride in zip(channels, kernels, strides, strict=True):
            layers += [nn.Conv2d(in_channels, out_channels, kernel, stride=stride), act]
            in_channels = out_channels
        self.net = nn.Sequential(*layers)
        if delta_orthogonal:
            self.apply(lambda m: _delta_orthogonal_(m, nn.init.calculate_gain("leaky_relu")))

    def conv_forward(self, images: torch.Tensor) -> torch.Tensor:
        """Applies the convolutions."""
        return self.net(images)


class NatureishCNN(ConvStack):
    """DQN's three strided convolutions (32×8/4, 64×4/2, 64×3/1 by default) with a delta-orthogonal init."""

    def __init__(
        self,
        img_shape: tuple[int, ...],
        channels_first: bool = False,
        activation: str = "leaky_relu",
        channels: tuple[int, ...] = (32, 64, 64),
        kernels: tuple[int, ...] = (8, 4, 3),
        strides: tuple[int, ...] = (4, 2, 1),
    ) -> None:
        super().__init__(
            img_shape, channels_first, activation, channels, kernels, strides, delta_orthogonal=True
        )


class DrQCNN(ConvStack):
    """DrQ-v2's encoder: four 32-channel 3×3 convolutions, the first with stride 2; delta-orthogonal init."""

    def __init__(
        self, img_shape: tuple[int, ...], channels_first: bool = False, activation: str = "leaky_relu"
    ) -> None:
        super().__init__(
            img_shape,
            channels_first,
            activation,
            channels=(32, 32, 32, 32),
            kernels=(3, 3, 3, 3),
            strides=(2, 1, 1, 1),
            delta_orthogonal=True,
        )


class GridworldCNN(ConvStack):
    """AMAGO's tiny CNN for gridworld maps (16×2/1, 32×2/1, 48×2/1 by default) with torch's default init.

    A delta-orthogonal init would start each 2×2 kernel as a single tap, blind to the neighbouring tiles;
    AMAGO keeps torch's init for this one.
    """

    def __init__(
        self,
        img_shape: tuple[int, ...],
        channels_first: bool = False,
        activation: str = "leaky_relu",
        channels: tuple[int, ...] = (16, 32, 48),
        kernels: tuple[int, ...] = (2, 2, 2),
        strides: tuple[int, ...] = (1, 1, 1),
    ) -> None:
        super().__init__(
            img_shape, channels_first, activation, channels, kernels, strides, delta_orthogonal=False
        )


class _ImpalaResidual(nn.Module):
    def __init__(self, channels: int, activation: str, group_norm: bool) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.act = activation_module(activation)
        # GroupNorm(4) needs channels divisible by 4; smaller or odd widths fall back to one group.
        self.norm = nn.GroupNorm(4 if channels % 4 == 0 else 1, channels) if group_norm else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.conv2(self.act(self.conv1(self.act(x)))))


class IMPALAishCNN(ImageBackbone):
    """IMPALA's blocks: conv 3×3 → max-pool 3/2 → two residual blocks (GroupNorm after each, optional)."""

    def __init__(
        self,
        img_shape: tuple[int, ...],
        channels_first: bool = False,
        activation: str = "leaky_relu",
        block_depths: tuple[int, ...] = (16, 32, 32),
        post_group_norm: bool = True,
    ) -> None:
        super().__init__(img_shape, channels_first)
        layers: list[nn.Module] = []
        width = self.in_channels
        for depth in block_depths:
            layers += [
                nn.Conv2d(width, depth, 3, padding=1),
                # No padding, and no activation after the last block: AMAGO's IMPALA-ish CNN (a 64×64 frame
                # gives 7×7 features), so its checkpoints load and the feature size is the one it reports.
                nn.MaxPool2d(3, stride=2),
                _ImpalaResidual(depth, activation, post_group_norm),
                _ImpalaResidual(depth, activation, post_group_norm),
            ]
            width = depth
        self.net = nn.Sequential(*layers)

    def conv_forward(self, images: torch.Tensor) -> torch.Tensor:
        """Applies the blocks."""
        return self.net(images)


class DrQv2Aug(nn.Module):
    """Random shifts of up to ``pad`` pixels (replicate padding, bilinear resample), one shift per frame."""

    def __init__(self, pad: int = 4, channels_first: bool = False) -> None:
        super().__init__()
        self.pad = pad
        self.channels_first = channels_first

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, L, *img) → same shape and dtype, each frame shifted independently."""
        batch, length = images.shape[:2]
        dtype = images.dtype
        x = images.reshape(batch * length, *images.shape[2:]).float()
        if not self.channels_first:
            x = x.permute(0, 3, 1, 2)
        n, _, height, width = x.shape
        if height != width:
            msg = f"drqv2_aug needs square images, got {height}×{width}; turn drqv2_aug off or resize the images."
            raise ValueError(msg)
        x = F.pad(x, (self.pad,) * 4, mode="replicate")
        eps = 1.0 / (height + 2 * self.pad)
        arange = torch.linspace(-1.0 + eps, 1.0 - eps, height + 2 * self.pad, device=x.device)[:height]
        arange = arange.unsqueeze(0).repeat(height, 1).unsqueeze(2)
        base_grid = torch.cat([arange, arange.transpose(1, 0)], dim=2).unsqueeze(0).repeat(n, 1, 1, 1)
        shift = torch.randint(0, 2 * self.pad + 1, size=(n, 1, 1, 2), device=x.device, dtype=x.dtype)
        shift = shift * 2.0 / (height + 2 * self.pad)
        x = F.grid_sample(x, base_grid + shift, padding_mode="zeros", align_corners=False)
        if not self.channels_first:
            x = x.permute(0, 2, 3, 1)
        if dtype == torch.uint8:
            x = x.round().clamp(0, 255)
        return x.to(dtype).reshape(images.shape)
