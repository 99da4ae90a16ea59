"""The ``cnn`` timestep encoder: a CNN over one image key, merged with the previous reward and action."""

from __future__ import annotations

import torch
from gymnasium import spaces
from torch import nn

from amago_core.suggest import did_you_mean
from amago_nets.base import TstepEncoder
from amago_nets.cnn import DrQCNN, DrQv2Aug, GridworldCNN, ImageBackbone, IMPALAishCNN, NatureishCNN
from amago_nets.layers import activation_module, normalization, symlog
from amago_nets.specs import CNNTstepEncoderConfig


class CNNTstepEncoder(TstepEncoder):
    """CNN(image) → Linear; symlog(rl2) → Linear; concatenate → activation → Linear → norm.

    With ``drqv2_aug``, the last ``aug_pct_of_batch`` of the batch rows are randomly shifted in train mode
    (never in eval mode, so rollouts see clean frames).
    """

    def __init__(
        self, config: CNNTstepEncoderConfig | None = None, *, obs_space: spaces.Dict, rl2_space: spaces.Box
    ) -> None:
        config = config or CNNTstepEncoderConfig()
        super().__init__(config, obs_space=obs_space, rl2_space=rl2_space)
        if config.obs_key not in obs_space.spaces:
            known = list(obs_space.spaces)
            msg = (
                f"cnn tstep encoder: obs_key={config.obs_key!r} is not an observation key (keys: {', '.join(known)}); "
                f"set obs_key to the image key.{did_you_mean(config.obs_key, known)}"
            )
            raise ValueError(msg)
        self.obs_key = config.obs_key
        space_shape = obs_space[config.obs_key].shape
        if space_shape is None:
            msg = (
                f"cnn tstep encoder: obs_key={config.obs_key!r} has a space without a fixed shape "
                f"({obs_space[config.obs_key]!r}); the image key needs a Box space."
            )
            raise ValueError(msg)
        img_shape = tuple(space_shape)
        self.cnn: ImageBackbone
        if config.cnn_type in ("nature", "gridworld"):
            backbone = NatureishCNN if config.cnn_type == "nature" else GridworldCNN
            channels, kernels, strides = config.conv_layers()
            self.cnn = backbone(
                img_shape,
                config.channels_first,
                config.activation,
                channels=channels,
                kernels=kernels,
                strides=strides,
            )
        elif config.cnn_type == "drq":
            self.cnn = DrQCNN(img_shape, config.channels_first, config.activation)
        else:
            self.cnn = IMPALAishCNN(
                img_shape,
                config.channels_first,
                config.activation,
                block_depths=config.impala_block_depths,
                post_group_norm=config.impala_post_group_norm,
            )
        self.augment = DrQv2Aug(pad=4, channels_first=config.channels_first) if config.drqv2_aug else None
        self.aug_pct_of_batch = config.aug_pct_of_batch
        self.img_features = nn.Linear(self.cnn.output_size(), config.img_features)
        self.rl2_features = nn.Linear(rl2_space.shape[0], config.rl2_features)
        self.act = activation_module(config.activation)
        self.merge = nn.Linear(config.img_features + config.rl2_features, config.d_output)
        self.out_norm = normalization(config.out_norm, config.d_output)
        self._emb_dim = config.d_output

    @property
    def emb_dim(self) -> int:
        """``d_output``."""
        return self._emb_dim

    def _maybe_augment(self, images: torch.Tensor) -> torch.Tensor:
        if self.augment is None or not self.training:
            return images
        n_augmented = round(images.shape[0] * self.aug_pct_of_batch)
        if n_augmented == 0:
            return images
        keep = images.shape[0] - n_augmented
        return torch.cat((images[:keep], self.augment(images[keep:])), dim=0)

    def inner_forward(self, obs: dict[str, torch.Tensor], rl2s: torch.Tensor) -> torch.Tensor:
        """Encodes (B, L, *img) images and (B, L, rl2_dim) rl2s into (B, L, emb_dim)."""
        image_features = self.img_features(self.cnn(self._maybe_augment(obs[self.obs_key])))
        rl2_features = self.rl2_features(symlog(rl2s.float()))
        merged = self.act(torch.cat((image_features, rl2_features), dim=-1))
        return self.out_norm(self.merge(merged))
