"""The two network contracts: ``TstepEncoder`` (one timestep → embedding) and ``TrajEncoder`` (sequence model)."""

from __future__ import annotations

import abc
import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from amago_core.config.component import ComponentConfig


@functools.cache
def _takes_pad_mask(method: Callable[..., Any]) -> bool:
    """Whether an encoder's ``inner_forward`` / ``forward`` override accepts a ``pad_mask`` keyword."""
    return "pad_mask" in inspect.signature(method).parameters


def encode_window(
    encoder: TrajEncoder, seq: torch.Tensor, time_idxs: torch.Tensor, pad_mask: torch.Tensor | None
) -> tuple[torch.Tensor, Any]:
    """A training window through ``encoder``, telling it where the padding is if its ``forward`` takes a
    ``pad_mask`` keyword (so it can skip the padding's work); encoders without one see the padded window."""
    if pad_mask is not None and _takes_pad_mask(type(encoder).forward):
        return encoder(seq, time_idxs, None, pad_mask=pad_mask)
    return encoder(seq, time_idxs, None)


class TstepEncoder(nn.Module, abc.ABC):
    """Maps one timestep (an observation dict plus the previous reward and action) to a fixed-size vector.

    Built as ``TstepEncoder(config, *, obs_space, rl2_space)``. Every timestep is encoded on its own: there
    is no hidden state, so rollouts may call it on (B, 1) slices and training on (B, L) windows.

    Subclasses implement :meth:`inner_forward` and :attr:`emb_dim`. ``config`` may be None for a subclass
    used directly from Python (as in AMAGO's tutorials); a config deriving from
    ``amago_nets.specs.TstepEncoderConfig`` adds the ``hide_rl2s`` / ``hide_rewards`` switches.

    Args:
        config: the component's validated config (or None).
        obs_space: a ``gymnasium.spaces.Dict`` of the observation keys.
        rl2_space: a ``gymnasium.spaces.Box`` of shape (1 + action dim,): previous reward, then previous action.
    """

    def __init__(
        self, config: ComponentConfig | None = None, *, obs_space: spaces.Dict, rl2_space: spaces.Box
    ) -> None:
        super().__init__()
        if not isinstance(obs_space, spaces.Dict):
            msg = (
                f"{type(self).__name__}: obs_space must be a gymnasium.spaces.Dict, got {type(obs_space).__name__}; "
                "wrap a single space as spaces.Dict({'observation': space})."
            )
            raise TypeError(msg)
        if not isinstance(rl2_space, spaces.Box) or len(rl2_space.shape) != 1 or rl2_space.shape[0] < 1:
            msg = (
                f"{type(self).__name__}: rl2_space must be a 1-d gymnasium.spaces.Box of size 1 + action dim "
                f"(previous reward, then previous action), got {rl2_space!r}."
            )
            raise TypeError(msg)
        self.config = config
        self.obs_space = obs_space
        self.rl2_space = rl2_space
        self.hide_rl2s = bool(getattr(config, "hide_rl2s", False))
        self.hide_rewards = bool(getattr(config, "hide_rewards", False))

    @property
    @abc.abstractmethod
    def emb_dim(self) -> int:
        """Size of the embedding this encoder outputs."""

    @abc.abstractmethod
    def inner_forward(self, obs: dict[str, torch.Tensor], rl2s: torch.Tensor) -> torch.Tensor:
        """Encodes (B, L, ...) observations and (B, L, rl2_dim) rl2s into (B, L, emb_dim)."""

    def forward(
        self, obs: dict[str, torch.Tensor], rl2s: torch.Tensor, pad_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Applies the rl2 masking switches, then :meth:`inner_forward`.

        Args:
            obs: one (B, L, ...) tensor per observation key.
            rl2s: (B, L, 1 + action dim) previous reward and action.
            pad_mask: (B, L) True where a timestep is padding (training batches). It is passed on to
                ``inner_forward`` implementations that take a ``pad_mask`` argument (e.g. to keep padding out of
                running input statistics); two-argument implementations, AMAGO's style, are called as before.

        Returns:
            (B, L, emb_dim) embeddings.
        """
        if self.hide_rewards:
            # Zeroing (not dropping) the column keeps parameter counts equal across ablations.
            rl2s = torch.cat((torch.zeros_like(rl2s[..., :1]), rl2s[..., 1:]), dim=-1)
        if self.hide_rl2s:
            rl2s = torch.zeros_like(rl2s)
        if pad_mask is not None and _takes_pad_mask(type(self).inner_forward):
            # The abstract signature has no ``pad_mask``; this subclass's override takes one (checked above).
            inner_forward: Callable[..., torch.Tensor] = self.inner_forward
            return inner_forward(obs, rl2s, pad_mask=pad_mask)
        return self.inner_forward(obs, rl2s)


class TrajEncoder(nn.Module, abc.ABC):
    """A causal sequence model over timestep embeddings: AMAGO's memory.

    Built as ``TrajEncoder(config, *, tstep_dim, max_seq_len)``. One :meth:`forward` serves both uses:

    - training: ``forward(seq (B, L, tstep_dim), time_idxs (B, L), None)`` over a window;
    - rollouts: ``h = init_hidden_state(B, device)``, then each step ``out, h = forward(x (B, 1, D), t (B, 1), h)``
      followed by ``h = reset_hidden_state(h, dones)`` with that step's done flags.

    A subclass whose ``forward`` also takes a ``pad_mask`` keyword ((B, L), True at padded steps, which come
    at the end of a row) gets it with every training window (:func:`encode_window`) and may skip the padding's
    work: its outputs at padded steps are never read.

    The contract checked by ``amago_core.testing.nets_checks``: stepping rows whose episodes reset at different
    steps gives the outputs of a full forward over each row's episode alone (``time_idxs`` restart at 0).

    Args:
        config: the component's validated config.
        tstep_dim: size of the timestep embeddings (the TstepEncoder's ``emb_dim``).
        max_seq_len: the longest window the model is trained on; bounded-context models (Transformers)
            attend to at most this many steps in rollouts.
    """

    def __init__(self, config: ComponentConfig | None = None, *, tstep_dim: int, max_seq_len: int) -> None:
        super().__init__()
        if tstep_dim < 1 or max_seq_len < 1:
            msg = f"{type(self).__name__}: tstep_dim and max_seq_len must be positive, got {tstep_dim}, {max_seq_len}."
            raise ValueError(msg)
        self.config = config
        self.tstep_dim = int(tstep_dim)
        self.max_seq_len = int(max_seq_len)

    @property
    @abc.abstractmethod
    def emb_dim(self) -> int:
        """Size of the output embedding."""

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> Any:
        """Rollout state for ``batch_size`` fresh episodes (None for memoryless encoders)."""
        return None

    def reset_hidden_state(self, hidden_state: Any, dones: np.ndarray | torch.Tensor) -> Any:
        """Returns ``hidden_state`` with the rows where ``dones`` is True reset to a fresh episode.

        Args:
            hidden_state: what :meth:`init_hidden_state` or :meth:`forward` returned.
            dones: (B,) booleans (numpy or torch); True rows start a new episode at the next step.
        """
        return hidden_state

    @abc.abstractmethod
    def forward(
        self, seq: torch.Tensor, time_idxs: torch.Tensor, hidden_state: Any = None
    ) -> tuple[torch.Tensor, Any]:
        """Encodes (B, L, tstep_dim) into (B, L, emb_dim), returning the updated rollout state.

        Args:
            seq: timestep embeddings.
            time_idxs: (B, L) integer time of each step within its episode (absolute, from 0).
            hidden_state: None for a training window (a fresh start), else the rollout state.
        """


def dones_as_mask(dones: np.ndarray | torch.Tensor, batch_size: int, device: torch.device) -> torch.Tensor:
    """Converts a (B,) done vector from numpy or torch into a bool tensor on ``device``.

    Raises:
        ValueError: the vector does not have one entry per row.
    """
    mask = torch.as_tensor(np.asarray(dones) if not torch.is_tensor(dones) else dones, device=device)
    mask = mask.reshape(-1).to(torch.bool)
    if mask.shape[0] != batch_size:
        msg = (
            f"dones has {mask.shape[0]} entries but the hidden state has {batch_size} rows; pass one per env."
        )
        raise ValueError(msg)
    return mask
