"""Conformance checks for timestep and trajectory encoders (what ``check_component`` runs for nets).

A plugin author calls these on their spec to learn whether their encoder keeps amago's contract:

    from amago_core.testing.nets_checks import check_traj_encoder
    check_traj_encoder(MY_SPEC)            # raises AssertionError naming what broke

The central check is AMAGO's bug #81: stepping a batch one timestep at a time, with rows whose episodes end
at *different* steps and a per-row ``reset_hidden_state``, must give the same outputs as a full forward over
each row's episodes on their own, including episodes longer than the encoder's context.

This module is imported by torch-free code paths, so torch (and numpy) are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec

TRAJ_TSTEP_DIM = 6
"""Timestep embedding size the trajectory checks build with."""
TRAJ_MAX_SEQ_LEN = 8
"""``max_seq_len`` the trajectory checks build with (rollouts run for several times this)."""

# Per-row step indices after which an episode ends: a long row (past the context), an early reset, frequent
# resets, and resets at steps no other row uses. Lock-step resets would hide per-row bugs (AMAGO #81).
_EPISODE_ENDS: tuple[tuple[int, ...], ...] = ((), (4,), (2, 5, 8, 11, 14, 17, 20), (9, 10, 16))
_ROLLOUT_STEPS = 3 * TRAJ_MAX_SEQ_LEN


def _fail(spec: ComponentSpec, problem: str) -> AssertionError:
    return AssertionError(f"{spec.group} {spec.name!r}: {problem}")


def _episode_time_idxs(n_steps: int, ends: Sequence[int]) -> list[int]:
    times, t = [], 0
    for step in range(n_steps):
        times.append(t)
        t = 0 if step in ends else t + 1
    return times


def _episode_segments(n_steps: int, ends: Sequence[int]) -> list[tuple[int, int]]:
    segments, start = [], 0
    for end in sorted(ends):
        if end < n_steps:
            segments.append((start, end + 1))
            start = end + 1
    if start < n_steps:
        segments.append((start, n_steps))
    return segments


def _check_train_forward(
    spec: ComponentSpec, encoder: Any, out: Any, shape: tuple[int, int, int], *, window: bool
) -> None:
    """A training forward's output ``out``: its (B, L, emb_dim) ``shape``, finite, and gradients reach the
    parameters (``window``: a trajectory encoder's training window)."""
    import torch

    if tuple(out.shape) != shape:
        raise _fail(
            spec, f"forward on (B={shape[0]}, L={shape[1]}) returned {tuple(out.shape)}, not {shape}."
        )
    if not torch.isfinite(out).all():
        raise _fail(spec, "forward returned NaN or inf" + (" on a training window." if window else "."))
    out.float().square().mean().backward()
    grads = [p.grad for p in encoder.parameters() if p.requires_grad]
    if grads and not any(g is not None and bool(g.abs().sum() > 0) for g in grads):
        raise _fail(
            spec, f"no parameter received a gradient from the {'training ' if window else ''}forward."
        )
    encoder.zero_grad(set_to_none=True)


def check_traj_encoder(
    spec: ComponentSpec,
    config: ComponentConfig | Mapping[str, Any] | None = None,
    *,
    device: str = "cpu",
    atol: float = 1e-4,
) -> None:
    """Builds a trajectory encoder with a tiny context and checks its contract.

    Checks: output shapes and finiteness over a training window of ``max_seq_len + 1`` steps; gradients
    reach the parameters; causality (a later input never changes an earlier output); and rollout
    equivalence with per-row resets at different steps, over episodes longer than ``max_seq_len``.

    Args:
        spec: the encoder's spec (group ``amago.traj_encoders``).
        config: its config (None: defaults).
        device: where to run (``cuda`` to check GPU kernels).
        atol: tolerance of the rollout-vs-full-forward comparison (loosen for bf16 kernels).

    Raises:
        AssertionError: the encoder breaks the contract; the message says where.
    """
    import torch

    torch.manual_seed(0)
    encoder = spec.build(config, tstep_dim=TRAJ_TSTEP_DIM, max_seq_len=TRAJ_MAX_SEQ_LEN).to(device)
    for attribute in ("emb_dim", "init_hidden_state", "reset_hidden_state", "forward"):
        if not hasattr(encoder, attribute):
            raise _fail(spec, f"the built object has no {attribute!r}; subclass amago_nets.base.TrajEncoder.")
    emb_dim = encoder.emb_dim
    if not isinstance(emb_dim, int) or emb_dim < 1:
        raise _fail(spec, f"emb_dim must be a positive int, got {emb_dim!r}.")

    # Training window: shapes, finiteness, gradients.
    batch, length = 3, TRAJ_MAX_SEQ_LEN + 1
    # The input requires grad so that parameter-free encoders still produce a differentiable output.
    seq = torch.randn(batch, length, TRAJ_TSTEP_DIM, device=device, requires_grad=True)
    time_idxs = (torch.arange(length, device=device) + torch.tensor([[0], [5], [40]], device=device)).long()
    encoder.train()
    _check_train_forward(
        spec, encoder, encoder(seq, time_idxs, None)[0], (batch, length, emb_dim), window=True
    )

    encoder.eval()
    with torch.no_grad():
        # Causality: changing step t must leave every output before t untouched.
        cut = length // 2
        seq = seq.detach()
        changed = seq.clone()
        changed[:, cut:] += torch.randn_like(changed[:, cut:])
        before, _ = encoder(seq, time_idxs, None)
        after, _ = encoder(changed, time_idxs, None)
        if not torch.allclose(before[:, :cut].float(), after[:, :cut].float(), atol=atol):
            raise _fail(spec, f"not causal: changing inputs from step {cut} on changed earlier outputs.")
        _check_rollout_equivalence(spec, encoder, device, atol)


def _check_rollout_equivalence(spec: ComponentSpec, encoder: Any, device: str, atol: float) -> None:
    import numpy as np
    import torch

    n_rows, n_steps = len(_EPISODE_ENDS), _ROLLOUT_STEPS
    seq = torch.randn(n_rows, n_steps, TRAJ_TSTEP_DIM, device=device)
    times = torch.tensor([_episode_time_idxs(n_steps, ends) for ends in _EPISODE_ENDS], device=device)
    dones = np.array([[step in ends for step in range(n_steps)] for ends in _EPISODE_ENDS])

    hidden = encoder.init_hidden_state(n_rows, device)
    stepped = []
    for step in range(n_steps):
        out, hidden = encoder(seq[:, step : step + 1], times[:, step : step + 1], hidden)
        if tuple(out.shape) != (n_rows, 1, encoder.emb_dim):
            raise _fail(
                spec, f"a rollout step returned {tuple(out.shape)}, not {(n_rows, 1, encoder.emb_dim)}."
            )
        stepped.append(out)
        # Alternate numpy and torch done vectors: rollouts pass either.
        step_dones = dones[:, step] if step % 2 else torch.as_tensor(dones[:, step], device=device)
        hidden = encoder.reset_hidden_state(hidden, step_dones)
    stepped_out = torch.cat(stepped, dim=1).float()

    for row, ends in enumerate(_EPISODE_ENDS):
        for start, stop in _episode_segments(n_steps, ends):
            full, _ = encoder(seq[row : row + 1, start:stop], times[row : row + 1, start:stop], None)
            gap = (full[0].float() - stepped_out[row, start:stop]).abs()
            if not bool((gap <= atol).all()):
                bad = int(torch.nonzero(gap.amax(-1) > atol)[0]) + start
                raise _fail(
                    spec,
                    f"rollout step {bad} of row {row} (episode steps {start}..{stop - 1}, resets after {list(ends)}) "
                    f"differs from the full forward over that episode by {float(gap.max()):.2e} (> {atol}). "
                    "Step-by-step inference with per-row resets must equal the full causal forward (AMAGO #81): "
                    "check reset_hidden_state resets only the done rows and that positions use time_idxs.",
                )


def _example_obs_space(spec: ComponentSpec) -> Any:
    import numpy as np
    from gymnasium import spaces

    if not spec.example_obs:
        return spaces.Dict({"observation": spaces.Box(-1.0, 1.0, shape=(5,), dtype=np.float32)})
    boxes: dict[str, spaces.Space[Any]] = {}
    for key, array in spec.example_obs.items():
        dtype = np.dtype(array.dtype)
        low, high = (0, 255) if dtype == np.uint8 else (-1.0, 1.0)
        boxes[key] = spaces.Box(low, high, shape=array.shape, dtype=dtype)
    return spaces.Dict(boxes)


def _sample_obs(obs_space: Any, batch: int, length: int, device: str, torch: Any) -> dict[str, Any]:
    obs = {}
    for key, space in obs_space.spaces.items():
        shape = (batch, length, *space.shape)
        if str(space.dtype) == "uint8":
            obs[key] = torch.randint(0, 256, shape, dtype=torch.uint8, device=device)
        else:
            obs[key] = torch.randn(shape, device=device)
    return obs


def check_tstep_encoder(
    spec: ComponentSpec,
    config: ComponentConfig | Mapping[str, Any] | None = None,
    *,
    obs_space: Any = None,
    rl2_space: Any = None,
    device: str = "cpu",
    atol: float = 1e-5,
) -> None:
    """Builds a timestep encoder and checks its contract.

    Checks: (B, L, emb_dim) finite outputs, gradients reach the parameters, and in eval mode each timestep
    and each row is encoded on its own (a (B, L) forward equals per-step and per-row forwards), which is
    what lets rollouts encode one step at a time.

    Args:
        spec: the encoder's spec (group ``amago.tstep_encoders``).
        config: its config (None: defaults).
        obs_space: a ``gymnasium.spaces.Dict`` to build with (default: the spec's ``example_obs``, else one 5-d float
            key ``observation``).
        rl2_space: a 1-d Box of previous reward + action (default: size 3).
        device: where to run.
        atol: tolerance of the independence comparison.

    Raises:
        AssertionError: the encoder breaks the contract; the message says where.
    """
    import numpy as np
    import torch
    from gymnasium import spaces

    torch.manual_seed(0)
    obs_space = obs_space if obs_space is not None else _example_obs_space(spec)
    if rl2_space is None:
        rl2_space = spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float32)
    encoder = spec.build(config, obs_space=obs_space, rl2_space=rl2_space).to(device)
    emb_dim = getattr(encoder, "emb_dim", None)
    if not isinstance(emb_dim, int) or emb_dim < 1:
        raise _fail(
            spec, f"emb_dim must be a positive int, got {emb_dim!r}; subclass amago_nets.base.TstepEncoder."
        )

    batch, length = 3, 4
    obs = _sample_obs(obs_space, batch, length, device, torch)
    rl2s = torch.randn(batch, length, rl2_space.shape[0], device=device)
    encoder.train()
    _check_train_forward(spec, encoder, encoder(obs, rl2s), (batch, length, emb_dim), window=False)

    encoder.eval()
    with torch.no_grad():
        full = encoder(obs, rl2s)
        per_step = torch.cat(
            [
                encoder({k: v[:, t : t + 1] for k, v in obs.items()}, rl2s[:, t : t + 1])
                for t in range(length)
            ],
            dim=1,
        )
        if not torch.allclose(full, per_step, atol=atol):
            raise _fail(
                spec,
                f"eval outputs differ by {float((full - per_step).abs().max()):.2e} between a (B, L) forward and "
                "one-step forwards; timesteps must be encoded independently (no hidden state across time).",
            )
        per_row = torch.cat(
            [encoder({k: v[b : b + 1] for k, v in obs.items()}, rl2s[b : b + 1]) for b in range(batch)]
        )
        if not torch.allclose(full, per_row, atol=atol):
            raise _fail(spec, "eval outputs of one row depend on the other rows of the batch.")
