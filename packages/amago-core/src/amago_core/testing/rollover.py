"""The roll-over check: rollouts that outrun the memory window, with staggered resets, equal their reference.

AMAGO's authors checked by hand (debug prints) what happens when a row's KV cache first fills and when rows
reset; AMAGO #81 was a silent cache bug under staggered resets. :func:`check_rollover` proves it instead, for
any trajectory encoder, and ``check_component`` runs it on every one.

This module is imported by torch-free code paths, so torch (and numpy) are imported inside the function.
"""

from __future__ import annotations

from typing import Any

from amago_core.testing.check import ComponentCheckError


def rollover_schedule(slots: int) -> tuple[int, tuple[tuple[int, ...], ...]]:
    """The rollout length and, per row, the steps after which its episode ends, for a memory of ``slots`` steps.

    Every row resets at its own steps (lock-step resets would hide per-row bugs), placed where a cache breaks:
    at the step that fills it, just after it first wraps, in the middle of a wrapped ring, every other step
    (the rows behind move at every reset when a cache keeps its rows sorted by length), and at the ends.
    """
    steps = 4 * slots + 3
    return steps, (
        (),  # one episode that wraps four times
        (slots - 1,),  # resets on the step that fills its memory, then wraps three times
        (slots, 3 * slots),  # resets just after its first wrap, and again after its third
        tuple(range(1, steps, 2)),  # two-step episodes: never full, always moving
        (2 * slots + 1,),  # resets in the middle of a twice-wrapped memory
        (0, slots - 1, steps - 2),  # one-step episodes first and last; row 1's reset step
    )


def check_rollover(
    encoder: Any,
    *,
    tstep_dim: int,
    max_seq_len: int,
    window: int | None = None,
    sink: int = 0,
    device: str = "cpu",
    atol: float = 1e-4,
    name: str = "trajectory encoder",
) -> tuple[int, ...]:
    """Steps ``encoder`` as a rollout does, past several roll-overs of its memory, and checks every output.

    The rollout is ``amago_core.experiment.acting``'s: ``init_hidden_state(B)``, then per step ``forward(x (B, 1,
    D), t (B, 1), h)`` and ``reset_hidden_state(h, dones)`` (numpy and torch dones in turn), over
    :func:`rollover_schedule` with ``slots = (window or max_seq_len) + sink``. The reference of row ``r``'s
    output at step ``t``, in an episode begun at step ``s`` (``time_idxs`` count from 0 there), is:

    - ``window`` None: the training forward (``hidden_state=None``) over steps ``s..t``, the contract of every
      trajectory encoder. A recurrent encoder (GRU, LSTM, Mamba) remembers all of ``s..t``; amago-nets'
      Transformer caches the last ``context`` steps (``window_size``, else ``max_seq_len``, plus the first
      ``sink_size``) and its training forward slides the same window, so the reference is the whole episode,
      not its last ``context`` steps: a cached key of layer 2 or deeper carries what its own step saw, so an
      ``n``-layer Transformer's step depends on ``n * (context - 1) + 1`` steps.
    - ``window`` given (one attention layer over a sliding window and a sink): the training forward over the
      episode's last ``window`` and first ``sink`` steps alone, which does not lean on the encoder's own mask,
      so a memory one step too long in training and rollouts alike is caught too.

    Args:
        encoder: the built trajectory encoder (put in eval mode here).
        tstep_dim: its input size.
        max_seq_len: the ``max_seq_len`` it was built with.
        window: see above.
        sink: with ``window``, the first steps of each episode kept besides it.
        device: where to run.
        atol: largest allowed absolute difference (loosen for bf16 kernels).
        name: how the failure message names the encoder.

    Returns:
        Per row, the most roll-overs (wraps of the ``slots``-step memory) in one of its episodes.

    Raises:
        ComponentCheckError: an output differs from its reference; the message names the row, the step, its
            place in the episode and the difference.
    """
    import numpy as np
    import torch

    span = window or max_seq_len
    steps, schedule = rollover_schedule(span + sink)
    dones = np.array([[step in ends for step in range(steps)] for ends in schedule])
    times = np.zeros(dones.shape, dtype=np.int64)
    for step in range(1, steps):
        times[:, step] = np.where(dones[:, step - 1], 0, times[:, step - 1] + 1)
    time_idxs = torch.as_tensor(times, device=device)
    seq = torch.randn(len(schedule), steps, tstep_dim, generator=torch.Generator().manual_seed(0)).to(device)

    def rollovers(episode_step: int) -> int:  # the memory wraps at step sink + span, then every span
        return max(0, (episode_step - sink) // span)

    encoder.eval()
    most = [0] * len(schedule)
    with torch.no_grad():
        hidden, outputs = encoder.init_hidden_state(len(schedule), device), []
        for step in range(steps):
            out, hidden = encoder(seq[:, step : step + 1], time_idxs[:, step : step + 1], hidden)
            if tuple(out.shape[:2]) != (len(schedule), 1):
                msg = f"{name}: a rollout step on (B={len(schedule)}, L=1) returned {tuple(out.shape)}."
                raise ComponentCheckError(msg)
            outputs.append(out.float())
            step_dones = dones[:, step] if step % 2 else torch.as_tensor(dones[:, step], device=device)
            hidden = encoder.reset_hidden_state(hidden, step_dones)
        stepped = torch.cat(outputs, dim=1)

        for row, ends in enumerate(schedule):
            starts = [0, *(end + 1 for end in ends if end + 1 < steps)]
            for start, stop in zip(starts, [*starts[1:], steps], strict=True):
                most[row] = max(most[row], rollovers(stop - start - 1))
                rows = slice(row, row + 1)
                full = encoder(seq[rows, start:stop], time_idxs[rows, start:stop], None)[0][0]
                for step in range(start, stop):
                    kept = [s for s in range(start, step + 1) if s < start + sink or s > step - span]
                    over, reference = f"steps {start}..{step}", full[step - start]
                    if window is not None:
                        over, reference = (
                            f"steps {kept}",
                            encoder(seq[rows, kept], time_idxs[rows, kept], None)[0][0, -1],
                        )
                    gap = float((reference.float() - stepped[row, step]).abs().max())
                    if not gap <= atol:  # also catches NaN
                        msg = (
                            f"{name}: row {row}, step {step} (episode step {step - start}, roll-overs so far: "
                            f"{rollovers(step - start)} of a {span + sink}-step memory; episodes end after steps "
                            f"{list(ends)}) differs from the full forward over {over} by {gap:.2e} (> {atol}). Check "
                            "that reset_hidden_state resets only the done rows, that the rollout memory drops "
                            "exactly the steps the training forward drops, and that positions use time_idxs."
                        )
                        raise ComponentCheckError(msg)
    return tuple(most)
