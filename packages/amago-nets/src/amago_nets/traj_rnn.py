"""The ``rnn`` (GRU) trajectory encoder."""

from __future__ import annotations

import itertools

import numpy as np
import torch
from torch import nn

from amago_nets.base import TrajEncoder, dones_as_mask
from amago_nets.layers import normalization
from amago_nets.real_steps import RealSteps
from amago_nets.specs import RNNTrajEncoderConfig


class GRUTrajEncoder(TrajEncoder):
    """Stacked GRU → Linear → norm.

    Training windows start from a zero state. Rollouts carry the GRU state ``(n_layers, B, d_hidden)`` without
    truncation; :meth:`reset_hidden_state` zeroes the rows whose episode ended.
    """

    def __init__(
        self, config: RNNTrajEncoderConfig | None = None, *, tstep_dim: int, max_seq_len: int
    ) -> None:
        config = config or RNNTrajEncoderConfig()
        super().__init__(config, tstep_dim=tstep_dim, max_seq_len=max_seq_len)
        self.n_layers = config.n_layers
        self.d_hidden = config.d_hidden
        self.d_output = config.d_output
        self.rnn = nn.GRU(tstep_dim, config.d_hidden, num_layers=config.n_layers, batch_first=True)
        self.out = nn.Linear(config.d_hidden, config.d_output)
        self.out_norm = normalization(config.norm, config.d_output)

    @property
    def emb_dim(self) -> int:
        """``d_output``."""
        return self.d_output

    def init_hidden_state(self, batch_size: int, device: torch.device | str) -> torch.Tensor:
        """Zero GRU state ``(n_layers, batch_size, d_hidden)``."""
        return torch.zeros(self.n_layers, batch_size, self.d_hidden, device=device)

    def reset_hidden_state(
        self, hidden_state: torch.Tensor | None, dones: np.ndarray | torch.Tensor
    ) -> torch.Tensor | None:
        """Zeroes the state of rows whose episode ended (a new tensor; the input is left as it was)."""
        if hidden_state is None:
            return None
        done_mask = dones_as_mask(dones, hidden_state.shape[1], hidden_state.device)
        return hidden_state.masked_fill(done_mask[None, :, None], 0.0)

    def forward(
        self,
        seq: torch.Tensor,
        time_idxs: torch.Tensor,
        hidden_state: torch.Tensor | None = None,
        pad_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Runs the GRU from ``hidden_state`` (zeros when None); returns outputs and the final state.

        A training window's ``pad_mask`` ((B, L), True at padding at the end of rows) lets rows stop early:
        the window is cut into a few stretches of time, and each stretch runs only the rows still real at its
        start (see :func:`length_stretches`). Outputs at padded steps are then zeros, and a row's returned
        state is the one at the end of the last stretch it ran in.
        """
        real = RealSteps.of_window(pad_mask) if hidden_state is None else None
        if real is None or real.count == 0:
            output, new_hidden = self.rnn(seq, hidden_state)
            return self.out_norm(self.out(output)), new_hidden
        output, new_hidden = self._run_by_length(seq, real.row_lengths)
        return real.put(self.out_norm(self.out(real.take(output)))), new_hidden

    def _run_by_length(self, seq: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The GRU over rows sorted longest first, stretch by stretch, each with the rows still running."""
        order = torch.argsort(lengths, descending=True, stable=True)
        sorted_lengths = lengths[order].tolist()
        rows = seq[order]
        batch = rows.shape[0]
        hidden = rows.new_zeros(self.n_layers, batch, self.d_hidden)
        pieces = []
        for start, stop, running in length_stretches(sorted_lengths):
            out, last = self.rnn(rows[:running, start:stop], hidden[:, :running].contiguous())
            if running < batch:
                out = torch.cat((out, out.new_zeros(batch - running, stop - start, self.d_hidden)))
                last = torch.cat((last, hidden[:, running:]), dim=1)
            pieces.append(out)
            hidden = last
        output = torch.cat(pieces, dim=1)
        if output.shape[1] < seq.shape[1]:  # every row ends before the window does
            tail = output.new_zeros(batch, seq.shape[1] - output.shape[1], self.d_hidden)
            output = torch.cat((output, tail), dim=1)
        unsort = torch.argsort(order)
        return output[unsort], hidden[:, unsort]


def length_stretches(sorted_lengths: list[int], max_stretches: int = 4) -> list[tuple[int, int, int]]:
    """Splits ``[0, longest)`` into stretches ``(start, stop, running)`` for rows sorted longest first.

    ``running`` rows (a prefix of the sorted rows) are real at ``start``. Stretch ends sit at the lengths of
    the rows ranked at even quantiles, so each stretch drops the rows that ended before it: the GRU then
    steps about the real steps plus a little padding, in at most ``max_stretches`` calls to its fused kernel.
    """
    batch = len(sorted_lengths)
    longest = sorted_lengths[0]
    ends = {sorted_lengths[(batch * k) // max_stretches] for k in range(1, max_stretches)}
    bounds = [0, *sorted(end for end in ends if 0 < end < longest), longest]
    stretches = []
    for start, stop in itertools.pairwise(bounds):
        running = sum(length > start for length in sorted_lengths)
        stretches.append((start, stop, running))
    return stretches
