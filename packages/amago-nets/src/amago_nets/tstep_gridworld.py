"""What the gridworld timestep encoders (``babyai``, ``xland``) share: the grid CNN, token embedders, the pipeline.

``GridworldTstepEncoder`` reads three observation keys by name: a grid of integer ids (or an RGB image), a
sequence of goal or mission tokens, and optional extra float features. Subclasses say which config fields
name the keys, which CNN reads the grid and how the tokens are embedded.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal, NamedTuple

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from amago_core.suggest import did_you_mean
from amago_nets.base import TstepEncoder
from amago_nets.cnn import ImageBackbone, NatureishCNN
from amago_nets.layers import MLP, normalization, symlog
from amago_nets.specs import GridworldTstepEncoderConfig

NATURE_MIN_SIDE = 36
"""Smallest image side the Nature CNN's 8/4, 4/2, 3/1 convolutions accept."""


class ObsKey(NamedTuple):
    """An observation key an encoder reads, with the config field that names it (for error messages)."""

    field: str
    """Config field (``mission_key``)."""
    key: str
    """Observation key (``mission``)."""


def observation_box(
    owner: str, obs_space: spaces.Dict, obs_key: ObsKey, *, integer: bool = False, otherwise: str = ""
) -> spaces.Box:
    """The Box space of an observation key, or a one-line error naming the key and what the env provides.

    Args:
        owner: the encoder's registered name, for messages.
        obs_space: the observation space.
        obs_key: the key and the config field that names it.
        integer: the key must hold integer ids with finite bounds (they index embedding tables).
        otherwise: the other way out the message offers when ``integer`` fails (``"or set ..."``).

    Raises:
        ValueError: the key is missing, is not a Box, or (``integer``) holds floats or unbounded values.
    """
    field_name, key = obs_key
    if key not in obs_space.spaces:
        known = list(obs_space.spaces)
        msg = (
            f"{owner} tstep encoder: {field_name}={key!r} is not an observation key; the env provides "
            f"{', '.join(known)}; set {field_name} to one of them.{did_you_mean(key, known)}"
        )
        raise ValueError(msg)
    space = obs_space[key]
    if not isinstance(space, spaces.Box):
        msg = f"{owner} tstep encoder: observation key {key!r} ({field_name}) must be a Box space, got {space!r}."
        raise ValueError(msg)
    if integer and not (np.issubdtype(space.dtype, np.integer) and space.is_bounded()):
        msg = (
            f"{owner} tstep encoder: observation key {key!r} ({field_name}) must hold bounded integer ids to "
            f"be embedded, got {space!r}; give it an integer Box with finite low and high{otherwise}."
        )
        raise ValueError(msg)
    return space


def _id_range(space: spaces.Box) -> tuple[int, int]:
    """(lowest id, number of ids) of an integer Box."""
    low, high = int(np.min(space.low)), int(np.max(space.high))
    return low, high - low + 1


class GridBackbone(nn.Module):
    """(B, L, H, W, C) grid or image → (B, L, features).

    With ``id_embedding > 0``, each channel's integer ids get a learned embedding of that width (one table per
    channel: tile 3 and colour 3 mean different things) and the CNN reads the (H, W, C · id_embedding)
    embedded grid. Otherwise the CNN reads the values scaled like pixels (``x / 128 - 1`` for uint8).

    Args:
        space: the grid's Box space ((H, W, C), channels last; integer with finite bounds to be embedded).
        cnn_type: ``gridworld`` (three 2x2 stride-1 convs) or ``nature`` (DQN's three strided convs).
        channels: output channels of the three convolutions.
        id_embedding: width of each channel's id embedding (0: none).
        activation: activation after each convolution.
    """

    channel_offsets: torch.Tensor

    def __init__(
        self,
        space: spaces.Box,
        *,
        cnn_type: str,
        channels: tuple[int, int, int],
        id_embedding: int,
        activation: str,
    ) -> None:
        super().__init__()
        shape = tuple(space.shape)
        if len(shape) != 3:
            msg = f"gridworld tstep encoders need a 3-d (H, W, C) grid, got shape {shape}."
            raise ValueError(msg)
        height, width, n_channels = shape
        self.embed = id_embedding > 0
        self.id_low = 0
        if self.embed:
            self.id_low, n_ids = _id_range(space)
            self.ids = nn.Embedding(n_channels * n_ids, id_embedding)
            self.register_buffer("channel_offsets", torch.arange(n_channels) * n_ids, persistent=False)
            shape = (height, width, n_channels * id_embedding)
        self.cnn: ImageBackbone
        if cnn_type == "nature":
            self.cnn = NatureishCNN(shape, False, activation, channels=channels)
        else:
            self.cnn = NatureishCNN(
                shape, False, activation, channels=channels, kernels=(2, 2, 2), strides=(1, 1, 1)
            )
            # AMAGO's gridworld CNN keeps torch's default init: the delta-orthogonal init of the Nature CNN
            # would start each 2x2 kernel as a single tap, blind to the neighbouring tiles.
            for module in self.cnn.modules():
                if isinstance(module, nn.Conv2d):
                    module.reset_parameters()
        self.features = self.cnn.output_size()

    def forward(self, grid: torch.Tensor) -> torch.Tensor:
        """(B, L, H, W, C) → (B, L, features)."""
        if not self.embed:
            return self.cnn(grid)
        ids = grid.long() - self.id_low + self.channel_offsets
        # (B, L, H, W, C, E) → (B, L, H, W, C·E): float input, so the CNN does not rescale it.
        return self.cnn(self.ids(ids).flatten(-2))


class TokenRNNEmbedding(nn.Module):
    """(B, L, T) integer tokens → (B, L, d_output): embedding → one-layer RNN over the T tokens → Linear → LayerNorm.

    AMAGO's ``TokenGoalEmb``: the RNN's last hidden state summarises the sequence (trailing blank tokens
    included, so the same words always give the same summary).

    Args:
        space: the tokens' integer Box space ((T,)).
        token_dim: width of each token's embedding.
        hidden: the RNN's hidden size.
        d_output: size of the output.
    """

    def __init__(self, space: spaces.Box, *, token_dim: int, hidden: int, d_output: int) -> None:
        super().__init__()
        self.low, n_ids = _id_range(space)
        self.tokens = nn.Embedding(n_ids, token_dim)
        self.rnn = nn.RNN(token_dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, d_output)
        self.norm = nn.LayerNorm(d_output)
        self.d_output = d_output

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, L, T) → (B, L, d_output)."""
        batch, length = tokens.shape[:2]
        folded = self.tokens(tokens.reshape(batch * length, -1).long() - self.low)
        _, last = self.rnn(folded)
        return self.norm(self.out(last[-1])).reshape(batch, length, self.d_output)


class TokenFlatEmbedding(nn.Module):
    """(B, L, T) integer tokens → (B, L, d_output): one embedding table per position → concatenate → Linear → LayerNorm.

    For short fixed-layout codes (XLand's goal: goal id, tile, colour, ...) where a token's position says
    what it is.

    Args:
        space: the tokens' integer Box space ((T,)).
        token_dim: width of each token's embedding.
        d_output: size of the output.
    """

    position_offsets: torch.Tensor

    def __init__(self, space: spaces.Box, *, token_dim: int, d_output: int) -> None:
        super().__init__()
        self.low, n_ids = _id_range(space)
        n_positions = math.prod(space.shape)
        self.tokens = nn.Embedding(n_positions * n_ids, token_dim)
        self.register_buffer("position_offsets", torch.arange(n_positions) * n_ids, persistent=False)
        self.out = nn.Linear(n_positions * token_dim, d_output)
        self.norm = nn.LayerNorm(d_output)
        self.d_output = d_output

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, L, T) → (B, L, d_output)."""
        batch, length = tokens.shape[:2]
        ids = tokens.reshape(batch, length, -1).long() - self.low + self.position_offsets
        return self.norm(self.out(self.tokens(ids).flatten(-2)))


TokenEmbedding = TokenRNNEmbedding | TokenFlatEmbedding


class GridworldTstepEncoder(TstepEncoder):
    """grid CNN ⊕ token embedding ⊕ MLP(extra ⊕ symlog(rl2)) → Linear → norm.

    Subclasses pass the keys their config names, the CNN that reads the grid and how the tokens are embedded.

    Args:
        config: the encoder's config.
        obs_space: the observation space (must hold the keys the config names).
        rl2_space: previous reward and action.
        owner: the encoder's registered name, for error messages.
        grid_key: the grid or image key.
        token_key: the goal or mission tokens' key.
        extra_key: the extra features' key (None: none).
        cnn_type: ``gridworld`` or ``nature``.
        default_channels: the convolutions' channels when the config leaves ``cnn_channels`` unset.
        token_embedding: builds the token embedder from the tokens' space.
    """

    def __init__(
        self,
        config: GridworldTstepEncoderConfig,
        *,
        obs_space: spaces.Dict,
        rl2_space: spaces.Box,
        owner: str,
        grid_key: ObsKey,
        token_key: ObsKey,
        extra_key: ObsKey | None,
        cnn_type: Literal["gridworld", "nature"],
        default_channels: tuple[int, int, int],
        token_embedding: Callable[[spaces.Box], TokenEmbedding],
    ) -> None:
        super().__init__(config, obs_space=obs_space, rl2_space=rl2_space)
        self.grid_key, self.token_key = grid_key.key, token_key.key
        self.extra_key = None if extra_key is None else extra_key.key
        id_embedding = config.grid_id_embedding if cnn_type == "gridworld" else 0
        # Embedded ids index tables, so they must be bounded integers; pixels may be anything.
        grid_space = observation_box(
            owner, obs_space, grid_key, integer=id_embedding > 0, otherwise=" or set grid_id_embedding=0"
        )
        token_space = observation_box(owner, obs_space, token_key, integer=True)
        extra_dim = 0
        if extra_key is not None:
            extra_dim = math.prod(observation_box(owner, obs_space, extra_key).shape)
        self.grid = GridBackbone(
            grid_space,
            cnn_type=cnn_type,
            channels=config.cnn_channels or default_channels,
            id_embedding=id_embedding,
            activation=config.activation,
        )
        self.tokens = token_embedding(token_space)
        features = config.extra_features
        self.extras = MLP(extra_dim + rl2_space.shape[0], features, 1, features, config.activation)
        self.merge = nn.Linear(self.grid.features + self.tokens.d_output + features, config.d_output)
        self.out_norm = normalization(config.out_norm, config.d_output)
        self._emb_dim = config.d_output

    @property
    def emb_dim(self) -> int:
        """``d_output``."""
        return self._emb_dim

    def inner_forward(self, obs: dict[str, torch.Tensor], rl2s: torch.Tensor) -> torch.Tensor:
        """Encodes (B, L, ...) observations and (B, L, rl2_dim) rl2s into (B, L, emb_dim)."""
        batch, length = rl2s.shape[:2]
        extras = [symlog(rl2s.float())]
        if self.extra_key is not None:
            extras.insert(0, obs[self.extra_key].reshape(batch, length, -1).float())
        merged = torch.cat(
            (
                self.grid(obs[self.grid_key]),
                self.tokens(obs[self.token_key]),
                self.extras(torch.cat(extras, dim=-1)),
            ),
            dim=-1,
        )
        return self.out_norm(self.merge(merged))
