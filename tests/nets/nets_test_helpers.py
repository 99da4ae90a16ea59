"""Encoders used by the tests: deliberately broken ones (the checks must catch them) and a user's own encoder."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import nn

from amago_nets.base import TstepEncoder
from amago_nets.cnn import NatureishCNN
from amago_nets.kv_cache import KVCache
from amago_nets.layers import normalization
from amago_nets.traj_rnn import GRUTrajEncoder
from amago_nets.traj_transformer import TransformerTrajEncoder


class LockstepResetGRU(GRUTrajEncoder):
    """AMAGO #81 in miniature: any done resets every row."""

    def reset_hidden_state(
        self, hidden_state: torch.Tensor, dones: np.ndarray | torch.Tensor
    ) -> torch.Tensor:
        if bool(np.asarray(torch.as_tensor(dones).cpu()).any()):
            return torch.zeros_like(hidden_state)
        return hidden_state


class NeverResetGRU(GRUTrajEncoder):
    """Forgets to reset: the next episode starts from the previous one's state."""

    def reset_hidden_state(
        self, hidden_state: torch.Tensor, dones: np.ndarray | torch.Tensor
    ) -> torch.Tensor:
        return hidden_state


class NeverResetTransformer(TransformerTrajEncoder):
    """Keeps attending to the previous episode's cached steps after a reset."""

    def reset_hidden_state(self, hidden_state: KVCache, dones: np.ndarray | torch.Tensor) -> KVCache:
        return hidden_state


class WindowIndexTransformer(TransformerTrajEncoder):
    """Uses the index within the window as position instead of absolute episode time."""

    def forward(self, seq, time_idxs, hidden_state=None):
        window_idxs = torch.arange(seq.shape[1], device=seq.device).expand(seq.shape[0], -1)
        return super().forward(seq, window_idxs, hidden_state)


class NoSlidingTransformer(TransformerTrajEncoder):
    """Full forward attends to everything, so a long rollout (sliding cache) no longer matches it."""

    def forward(self, seq, time_idxs, hidden_state=None):
        saved = self.context
        if hidden_state is None:
            self.context = 10**9
        try:
            return super().forward(seq, time_idxs, hidden_state)
        finally:
            self.context = saved


class SinklessCacheTransformer(TransformerTrajEncoder):
    """Gives its cache the sink's slots but no sink: once the ring wraps, it overwrites the episode's first steps."""

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> KVCache:
        return replace(super().init_hidden_state(batch_size, device), sink=0)


class PeekingTstepEncoder(TstepEncoder):
    """Not independent across time: mixes in the mean over the window."""

    def __init__(self, config=None, *, obs_space: spaces.Dict, rl2_space: spaces.Box) -> None:
        super().__init__(config, obs_space=obs_space, rl2_space=rl2_space)
        self.linear = nn.Linear(rl2_space.shape[0], 4)

    @property
    def emb_dim(self) -> int:
        return 4

    def inner_forward(self, obs, rl2s):
        out = self.linear(rl2s)
        return out + out.mean(dim=1, keepdim=True)


class MultiModalRobotTstepEncoder(TstepEncoder):
    """The seeds' tutorial encoder (image + joints), written as a user would, without a config."""

    def __init__(self, config=None, *, obs_space: spaces.Dict, rl2_space: spaces.Box) -> None:
        super().__init__(obs_space=obs_space, rl2_space=rl2_space)
        img_space = obs_space["image"]
        joint_space = obs_space["joints"]
        self.cnn = NatureishCNN(img_shape=img_space.shape)
        cnn_out_size = self.cnn.output_size()
        self.joint_rl2_emb = nn.Linear(joint_space.shape[-1] + rl2_space.shape[-1], 32)
        self.merge = nn.Linear(cnn_out_size + 32, 128)
        self.output_layer = nn.Linear(128, 64)
        self.out_norm = normalization("layer", 64)

    @property
    def emb_dim(self) -> int:
        return 64

    def inner_forward(self, obs, rl2s, log_dict=None):
        img_features = self.cnn(obs["image"])
        joints_and_rl2s = torch.cat((obs["joints"], rl2s), dim=-1)
        joint_features = F.leaky_relu(self.joint_rl2_emb(joints_and_rl2s))
        merged = F.leaky_relu(self.merge(torch.cat((img_features, joint_features), dim=-1)))
        return self.out_norm(self.output_layer(merged))
