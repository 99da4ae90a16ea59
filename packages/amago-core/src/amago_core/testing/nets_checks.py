"""Conformance checks for timestep and trajectory encoders (what ``check_component`` runs for nets).

A plugin author calls these on their spec to learn whether their encoder keeps amago's contract:

    from amago_core.testing.nets_checks import check_traj_encoder
    check_traj_encoder(MY_SPEC)            # raises AssertionError naming what broke

The central check is AMAGO's bug #81: stepping a batch one timestep at a time, with rows whose episodes end
at *different* steps and a per-row ``reset_hidden_state``, must give the same outputs as a full forward over
each row's episodes on their own, including episodes that wrap the encoder's memory several times
(:func:`~amago_core.testing.rollover.check_rollover`).

This module is imported by torch-free code paths, so torch (and numpy) are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amago_core.config.component import ComponentConfig
from amago_core.plugins.spec import ComponentSpec
from amago_core.testing.rollover import check_rollover

TRAJ_TSTEP_DIM = 6
"""Timestep embedding size the trajectory checks build with."""
TRAJ_MAX_SEQ_LEN = 5
"""``max_seq_len`` the trajectory checks build with (small, so that rollouts wrap the memory several times)."""


def _fail(spec: ComponentSpec, problem: str) -> AssertionError:
    return AssertionError(f"{spec.group} {spec.name!r}: {problem}")


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
    equivalence with per-row resets at different steps, over episodes that wrap a ``max_seq_len`` memory
    three or four times (:func:`~amago_core.testing.rollover.check_rollover`).

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
    check_rollover(
        encoder,
        tstep_dim=TRAJ_TSTEP_DIM,
        max_seq_len=TRAJ_MAX_SEQ_LEN,
        device=device,
        atol=atol,
        name=f"{spec.group} {spec.name!r}",
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
