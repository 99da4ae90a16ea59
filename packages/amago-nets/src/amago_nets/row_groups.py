"""Splits a rollout batch's cache rows into runs of similar length, so cached attention reads only what they need.

One masked attention call over the whole batch reads every row's cache up to the longest row, so a batch
at mixed lengths costs as much as one where every row is at the longest length. With many envs or long
contexts, rollout attention is bound by reading the cache, so it pays to split the rows into a few
contiguous runs, each attending only up to its own longest row. Runs are views of the cache (no copies); :class:`~amago_nets.kv_cache.KVCache`
keeps its rows sorted longest first so that rows of similar length are neighbours. Each extra run costs a
fixed overhead (one more attention call), so the split is chosen by a small dynamic program that weighs
slots read against calls made.

A plan depends only on the rows' lengths, so it is built once per rollout step and reused by every layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import torch

# Fixed cost of one more attention call, in cache slots read (row x slot). On one CPU thread at d_model 128
# with 8 heads a call costs ~40 us and reading a slot ~60 ns (64 envs, context 1000), so a split pays once it
# saves ~700 slots; rounded up because small batches gain less than the slot count suggests (at 16 envs
# and context 250 the step is dominated by work that does not depend on length). On CUDA a launch costs
# about as much while slots are far cheaper, so splitting must save more (a guess: not yet measured).
CPU_GROUP_OVERHEAD = 1024
CUDA_GROUP_OVERHEAD = 8192

# The split is searched over at most this many equal runs of rows, which bounds its Python cost (quadratic
# in the runs, paid every step) while still allowing the few splits that pay off.
MAX_RUNS = 8


@dataclass(frozen=True)
class RowGroup:
    """Cache rows ``[start, stop)``, attending together over their first ``used`` slots.

    Attributes:
        start: first row.
        stop: one past the last row.
        used: slots read, the group's longest valid length.
        mask: (stop - start, 1, 1, used) bool, True where a slot is valid; None when every row of the group
            is at ``used`` (sdpa then needs no mask).
    """

    start: int
    stop: int
    used: int
    mask: torch.Tensor | None


def group_overhead(device: torch.device) -> int:
    """The fixed cost of one more group on ``device``, in cache slots read."""
    return CUDA_GROUP_OVERHEAD if device.type == "cuda" else CPU_GROUP_OVERHEAD


def plan_row_groups(valid: torch.Tensor, *, overhead: int | None = None) -> tuple[RowGroup, ...]:
    """Splits rows into contiguous groups, minimizing slots read plus ``overhead`` per group.

    Any row order gives correct groups; rows sorted by length give the cheapest ones.

    Args:
        valid: (B,) number of valid cache slots per row (at least 1).
        overhead: cost of one more group in slots read; defaults to :func:`group_overhead` of the device.

    Returns:
        Groups covering rows ``0..B-1`` in order; each reads at least every one of its rows' valid slots.
    """
    if overhead is None:
        overhead = group_overhead(valid.device)
    lengths = valid.tolist()
    batch = len(lengths)
    longest = max(lengths)
    # One group reads batch * longest slots; no split can save more than batch * (longest - shortest).
    if batch * (longest - min(lengths)) <= overhead:
        spans = [(0, batch)]
    else:
        spans = _cheapest_spans(lengths, overhead)
    # One mask for all groups, sliced per group: building a mask per group per step costs more than that.
    valid_slots = None
    groups = []
    for start, stop in spans:
        span = lengths[start:stop]
        used = max(span)
        mask = None
        if min(span) != used:
            if valid_slots is None:
                valid_slots = torch.arange(longest, device=valid.device)[None, :] < valid[:, None]
            mask = valid_slots[start:stop, None, None, :used]
        groups.append(RowGroup(start=start, stop=stop, used=used, mask=mask))
    return tuple(groups)


def _cheapest_spans(lengths: list[int], overhead: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` spans covering ``lengths`` that minimize slots read + overhead per span."""
    batch = len(lengths)
    run = -(-batch // MAX_RUNS)
    bounds = [*range(0, batch, run), batch]
    run_max = [max(lengths[a:b]) for a, b in pairwise(bounds)]
    # best[k]: cheapest split of the first k runs; cut[k]: first run of its last span, which reads
    # (rows in it) x (its longest row).
    best = [0] * len(bounds)
    cut = [0] * len(bounds)
    for k in range(1, len(bounds)):
        longest = run_max[k - 1]
        best[k], cut[k] = best[k - 1] + overhead + (bounds[k] - bounds[k - 1]) * longest, k - 1
        for j in range(k - 2, -1, -1):
            longest = max(longest, run_max[j])
            cost = best[j] + overhead + (bounds[k] - bounds[j]) * longest
            if cost < best[k]:
                best[k], cut[k] = cost, j
    spans = []
    k = len(bounds) - 1
    while k > 0:
        spans.append((bounds[cut[k]], bounds[k]))
        k = cut[k]
    return spans[::-1]
