"""The ``ff`` timestep encoder: an MLP over every flattened observation key plus previous reward and action."""

from __future__ import annotations

import math

import torch
from gymnasium import spaces

from amago_core.suggest import did_you_mean
from amago_nets.base import TstepEncoder
from amago_nets.layers import MLP, InputNorm, normalization
from amago_nets.specs import FFTstepEncoderConfig


class FFTstepEncoder(TstepEncoder):
    """Flatten each chosen key (sorted by name), concatenate with the rl2 vector, standardise, MLP, norm."""

    def __init__(
        self, config: FFTstepEncoderConfig | None = None, *, obs_space: spaces.Dict, rl2_space: spaces.Box
    ) -> None:
        config = config or FFTstepEncoderConfig()
        super().__init__(config, obs_space=obs_space, rl2_space=rl2_space)
        self.obs_keys = tuple(sorted(config.obs_keys if config.obs_keys is not None else obs_space.spaces))
        for key in self.obs_keys:
            if key not in obs_space.spaces:
                known = list(obs_space.spaces)
                msg = (
                    f"ff tstep encoder: obs_keys names {key!r}, which the observation space lacks "
                    f"(keys: {', '.join(known)}); fix obs_keys.{did_you_mean(key, known)}"
                )
                raise ValueError(msg)
        d_input = rl2_space.shape[0]
        for key in self.obs_keys:
            shape = obs_space[key].shape
            if shape is None:
                msg = (
                    f"ff tstep encoder: observation key {key!r} has a space without a fixed shape "
                    f"({obs_space[key]!r}); leave it out of obs_keys or give it a Box/Discrete space."
                )
                raise ValueError(msg)
            d_input += max(math.prod(shape), 1)
        d_hidden, d_output = config.d_hidden, config.d_output
        if config.auto_scale:
            d_hidden, d_output = max(d_hidden, d_input), max(d_output, d_input)
        self._emb_dim = d_output
        self.input_norm = InputNorm(d_input) if config.normalize_inputs else None
        self.mlp = MLP(d_input, d_hidden, config.n_layers, d_output, config.activation, config.norm)
        self.out_norm = normalization(config.out_norm, d_output)

    @property
    def emb_dim(self) -> int:
        """``d_output`` (raised to the input size by ``auto_scale``)."""
        return self._emb_dim

    def inner_forward(
        self, obs: dict[str, torch.Tensor], rl2s: torch.Tensor, pad_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Encodes (B, L, ...) observations and rl2s into (B, L, emb_dim); padding stays out of input statistics."""
        batch, length = rl2s.shape[:2]
        flat = [obs[key].reshape(batch, length, -1).float() for key in self.obs_keys]
        x = torch.cat([*flat, rl2s.float()], dim=-1)
        if self.input_norm is not None:
            x = self.input_norm(x, pad_mask)
        return self.out_norm(self.mlp(x))
