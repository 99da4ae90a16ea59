"""The Transformer's rollout state: a per-env ring-buffer KV cache holding each env's last steps (and, with an
attention sink, its first ones)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from amago_nets.base import dones_as_mask


@dataclass(frozen=True)
class KVCache:
    """Keys and values of every layer, plus how many steps each env has seen since its episode began.

    An env's step ``n`` (counted from its reset) is written to slot ``n % context`` of its cache row, so
    once it has seen ``context`` steps each new step overwrites its oldest one: a sliding window per env,
    with no copying. Slot order does not matter to attention because positions are encoded from absolute
    episode time before keys are cached. Until an env wraps, its valid slots are the prefix ``[0, steps]``.

    With an attention sink (``sink`` > 0, attention ``sliding_sink``) the first ``sink`` slots hold the
    episode's first ``sink`` steps for good and the ring is the other ``context - sink`` slots: step ``n >=
    sink`` goes to slot ``sink + (n - sink) % (context - sink)``. A step's visible set (the sink steps plus the
    window of the last ``context - sink`` steps, which may overlap) is then exactly the cache's valid slots,
    which are still the prefix ``[0, steps]`` until the row wraps and every slot after, so nothing else about
    the cache (valid slots, row groups, resets) depends on the sink.

    Envs and cache rows are kept apart so that the rows can stay sorted longest first (``sort_rows``): rows
    of similar length are then neighbours, and attention reads each contiguous run of them only up to its
    own longest row (see :mod:`amago_nets.row_groups`) instead of every row up to the batch's longest. All
    envs advance together, so only resets change the order: a reset env takes one of the last rows and the
    rows behind it move up (copying only their valid slots).

    A reset zeroes the rows it gives to restarted envs. Stale slots are masked and never read, but with rows
    kept in env order (``sort_rows`` off) a restarted env's row then equals a fresh cache's, which is what an
    exported step (which restarts an env by putting a fresh cache row in place) reproduces.

    Like :meth:`write`, :meth:`reset` works in place on ``keys`` and ``values``: use only the cache it
    returns. :meth:`written_layer`, :meth:`valid_slots` and :meth:`with_layers` are the fixed-shape twins
    of the step's cache reads and writes, for a step that is traced or exported (see
    ``TransformerTrajEncoder``): they change nothing in place and make no Python decision from tensor values.

    Attributes:
        keys: (n_layers, B, context, n_heads, head_dim) indexed by cache row, or (n_layers, B, n_heads,
            context, head_dim) with ``heads_first``; :meth:`layer_keys` gives the former view of either.
        values: same shape as ``keys``.
        lengths: (B,) int64, steps seen by each env since its last reset (not capped), in env order.
        envs: (B,) int64, the env held by each cache row.
        rows: (B,) int64, the cache row of each env (the inverse of ``envs``).
        sort_rows: keep rows sorted longest first at resets (off where attention needs no grouping).
        heads_first: store each head's slots contiguously, which sdpa reads about twice as fast on CPU
            as slots strided by the heads; flash-attn needs the slots-first layout.
        sink: number of first steps of each episode kept in the first slots, never overwritten (0: none).
    """

    keys: torch.Tensor
    values: torch.Tensor
    lengths: torch.Tensor
    envs: torch.Tensor
    rows: torch.Tensor
    sort_rows: bool = True
    heads_first: bool = False
    sink: int = 0

    @classmethod
    def empty(
        cls,
        n_layers: int,
        batch_size: int,
        context: int,
        n_heads: int,
        head_dim: int,
        device: torch.device | str,
        dtype: torch.dtype = torch.float32,
        *,
        sort_rows: bool = True,
        heads_first: bool = False,
        sink: int = 0,
    ) -> KVCache:
        """A cache for ``batch_size`` fresh episodes, env ``i`` in row ``i``; ``context`` slots per row, the
        first ``sink`` of them for the episode's first steps.

        Raises:
            ValueError: ``sink`` leaves no slot for the window.
        """
        if not 0 <= sink < context:
            msg = (
                f"KVCache: sink={sink} must be at least 0 and leave slots for the window (context={context}); "
                "give the cache context = window + sink slots."
            )
            raise ValueError(msg)
        if heads_first:
            shape = (n_layers, batch_size, n_heads, context, head_dim)
        else:
            shape = (n_layers, batch_size, context, n_heads, head_dim)
        identity = torch.arange(batch_size, device=device)
        # Zeros, not NaN: stale slots are masked, but a NaN times a zero weight would still poison a sum.
        return cls(
            keys=torch.zeros(shape, device=device, dtype=dtype),
            values=torch.zeros(shape, device=device, dtype=dtype),
            lengths=torch.zeros(batch_size, dtype=torch.long, device=device),
            envs=identity,
            rows=identity.clone(),
            sort_rows=sort_rows,
            heads_first=heads_first,
            sink=sink,
        )

    @property
    def batch_size(self) -> int:
        """Number of envs (and cache rows)."""
        return self.keys.shape[1]

    @property
    def context(self) -> int:
        """Number of steps each env keeps (its slots: the sink's and the window's)."""
        return self.keys.shape[3 if self.heads_first else 2]

    def layer_keys(self, layer: int) -> torch.Tensor:
        """(B, context, H, d) view of ``layer``'s keys by cache row, whatever the storage layout."""
        return self._slots_first(self.keys)[layer]

    def layer_values(self, layer: int) -> torch.Tensor:
        """(B, context, H, d) view of ``layer``'s values by cache row, whatever the storage layout."""
        return self._slots_first(self.values)[layer]

    def _slots_first(self, storage: torch.Tensor) -> torch.Tensor:
        return storage.transpose(2, 3) if self.heads_first else storage

    def write_slots(self) -> torch.Tensor:
        """(B,) slot each env's next step is written to, in env order."""
        if not self.sink:
            return self.lengths % self.context
        # Before the ring first wraps, step n goes to slot n (sink steps included); after, the ring cycles.
        ring = self.context - self.sink
        cycled = self.sink + (self.lengths - self.sink).clamp(min=0) % ring
        return torch.where(self.lengths < self.sink, self.lengths, cycled)

    def valid_after_write(self) -> torch.Tensor:
        """(B,) number of valid slots of each env once its next step is written, in env order."""
        return (self.lengths + 1).clamp(max=self.context)

    def by_row(self, per_env: torch.Tensor) -> torch.Tensor:
        """Reorders a tensor with one entry per env (dim 0) into cache-row order."""
        return per_env.index_select(0, self.envs)

    def by_env(self, per_row: torch.Tensor) -> torch.Tensor:
        """Reorders a tensor with one entry per cache row (dim 0) back into env order."""
        return per_row.index_select(0, self.rows)

    def to_rows(self, per_env: torch.Tensor) -> torch.Tensor:
        """:meth:`by_row` that reads ``envs`` only when rows are sorted (otherwise rows are in env order), so
        a graph stepping a cache with unsorted rows does not depend on the ``envs`` it is given."""
        return self.by_row(per_env) if self.sort_rows else per_env

    def to_envs(self, per_row: torch.Tensor) -> torch.Tensor:
        """:meth:`by_env` that reads ``rows`` only when rows are sorted (see :meth:`to_rows`)."""
        return self.by_env(per_row) if self.sort_rows else per_row

    def write_index(self) -> torch.Tensor:
        """(B * H,) positions of this step's keys in one layer's storage seen as (B * H * context, head_dim) rows:
        where :meth:`write` puts row ``b``'s head ``h`` (cache-row order, heads inner). The same for every layer
        of a step, so a step computes it once."""
        heads = self.keys.shape[2 if self.heads_first else 3]
        slots = self.by_row(self.write_slots())[:, None]  # (B, 1)
        rows = torch.arange(self.batch_size, device=slots.device)[:, None]
        head = torch.arange(heads, device=slots.device)[None, :]
        if self.heads_first:  # storage (B, H, context, d)
            index = (rows * heads + head) * self.context + slots
        else:  # storage (B, context, H, d)
            index = (rows * self.context + slots) * heads + head
        return index.flatten()

    def write(
        self, layer: int, key: torch.Tensor, value: torch.Tensor, index: torch.Tensor | None = None
    ) -> None:
        """Stores one step's (B, 1, H, d) key and value of ``layer``, given in cache-row order (in place).

        ``index`` is :meth:`write_index` (computed here when None; a step with several layers passes one). One
        ``index_copy_`` per tensor: advanced indexing into the strided slot view cost ~10x more per step.
        """
        if index is None:
            index = self.write_index()
        head_dim = self.keys.shape[-1]
        for storage, new in ((self.keys, key), (self.values, value)):
            rows = new[:, 0].reshape(-1, head_dim).to(storage.dtype)  # (B * H, d), heads inner
            storage[layer].view(-1, head_dim).index_copy_(0, index, rows)

    def advanced(self) -> KVCache:
        """The cache after every env's step has been written by all layers."""
        return replace(self, lengths=self.lengths + 1)

    def valid_slots(self) -> torch.Tensor:
        """(B, context) bool by cache row, True at the slots that hold the row's steps once its next step is
        written: the first ``valid_after_write`` slots (every slot once the row has wrapped)."""
        slots = torch.arange(self.context, device=self.lengths.device)
        return slots[None, :] < self.to_rows(self.valid_after_write())[:, None]

    def written_layer(
        self, layer: int, key: torch.Tensor, value: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``layer``'s keys and values with one step's (B, 1, H, d) key and value (cache-row order) stored at
        each row's write slot, as new (B, ...) tensors in the storage layout: what :meth:`write` does in
        place, as a select, so that a traced or exported graph holds it as data flow."""
        slots = torch.arange(self.context, device=self.lengths.device)
        at_slot = slots[None, :] == self.to_rows(self.write_slots())[:, None]  # (B, context)
        if self.heads_first:
            at_slot = at_slot[:, None, :, None]
            key, value = key.transpose(1, 2), value.transpose(1, 2)
        else:
            at_slot = at_slot[:, :, None, None]
        keys = torch.where(at_slot, key.to(self.keys.dtype), self.keys[layer])
        values = torch.where(at_slot, value.to(self.values.dtype), self.values[layer])
        return keys, values

    def with_layers(self, keys: list[torch.Tensor], values: list[torch.Tensor]) -> KVCache:
        """The cache after a step whose every layer's storage came from :meth:`written_layer`."""
        return replace(self, keys=torch.stack(keys), values=torch.stack(values), lengths=self.lengths + 1)

    def reset(self, dones: np.ndarray | torch.Tensor) -> KVCache:
        """Envs where ``dones`` is True start over, each in a zeroed row.

        With ``sort_rows``, reset envs move to the last rows and the kept rows behind their old ones move up.
        A reset env (length 0) is the shortest, and kept envs all advance together, so rows stay sorted
        longest first. A kept row that moved holds stale (masked) slots beyond its length.
        """
        done = dones_as_mask(dones, self.batch_size, self.lengths.device)
        lengths = self.lengths.masked_fill(done, 0)
        if not self.sort_rows:
            restarted = self.rows[done]
            for storage in (self.keys, self.values):
                storage[:, restarted] = 0
            return replace(self, lengths=lengths)
        row_done = self.by_row(done)
        kept = torch.nonzero(~row_done).flatten()
        n_kept = kept.shape[0]
        if n_kept == self.batch_size:
            return replace(self, lengths=lengths)
        # Rows before the first reset one stay put; kept rows after it move up to close the gaps.
        first = int(torch.nonzero(row_done)[0])
        moved = kept[first:]
        if moved.numel():
            # A row's valid steps lie in slots [0, min(length, context)), so only those are copied.
            used = int(
                self.lengths.index_select(0, self.envs.index_select(0, moved)).max().clamp(max=self.context)
            )
            if used:
                self._move_rows(moved.tolist(), first, used)
        # Resets are rare (one per episode), so clearing whole rows costs nothing measurable per step.
        for storage in (self.keys, self.values):
            storage[:, n_kept:] = 0
        envs = torch.cat((self.envs.index_select(0, kept), self.envs[row_done]))
        rows = torch.empty_like(self.rows)
        rows[envs] = torch.arange(self.batch_size, device=rows.device)
        return replace(self, lengths=lengths, envs=envs, rows=rows)

    def _move_rows(self, moved: list[int], first: int, used: int) -> None:
        """Copies the first ``used`` slots of rows ``moved`` (ascending) to rows ``first, first + 1, ...``.

        Rows only move up (to a lower index), so copying each contiguous run of them in ascending order never
        overwrites a row before it is read; each run is one slice copy through a temporary. (One advanced-index
        gather and scatter of all rows cost ~5 ms when the longest row reset at 16 envs, context 250.)
        """
        target = first
        start = 0
        while start < len(moved):
            stop = start + 1
            while stop < len(moved) and moved[stop] == moved[stop - 1] + 1:
                stop += 1
            source, count = moved[start], stop - start
            if source != target:
                for storage in (self._slots_first(self.keys), self._slots_first(self.values)):
                    block = storage[:, source : source + count, :used].clone()
                    storage[:, target : target + count, :used] = block
            target += count
            start = stop
