"""Shared setup of the agent tests: one CPU thread, tiny agents and random batches with partial masks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces

from amago_core.data.batch import Batch
from amago_core.plugins import registries

torch.set_num_threads(1)

OBS_DIM = 3
TINY_TSTEP = {"kind": "ff", "n_layers": 1, "d_hidden": 16, "d_output": 8}
TINY_TRAJ = {"kind": "rnn", "d_hidden": 8, "d_output": 8, "n_layers": 1}
TINY_HEADS = {"actor": {"d_hidden": 16}, "critic": {"d_hidden": 16}}
ACTION_SPACES = {
    "discrete": spaces.Discrete(4),
    "continuous": spaces.Box(-1.0, 1.0, (2,)),
    "multibinary": spaces.MultiBinary(3),
}


def as_space(space: spaces.Space | str) -> spaces.Space:
    """A space, or the one ``ACTION_SPACES`` names."""
    return ACTION_SPACES[space] if isinstance(space, str) else space


def action_dim(space: spaces.Space) -> int:
    """Buffer action size of ``space``."""
    return int(space.n) if isinstance(space, spaces.Discrete) else int(space.shape[0])


def build_agent(
    kind: str,
    action_space: spaces.Space | str,
    *,
    traj_encoder: Any = TINY_TRAJ,
    max_seq_len: int = 8,
    **options: Any,
) -> torch.nn.Module:
    """A tiny agent of ``kind`` (``agent`` / ``multitask``) built through the registry."""
    action_space = as_space(action_space)
    config: dict[str, Any] = {"kind": kind, **TINY_HEADS}
    if kind == "multitask":
        config.update(min_return=-50.0, max_return=50.0, output_bins=16)
    if kind == "agent" and isinstance(action_space, spaces.MultiBinary):
        config["online_coeff"] = 0.0  # Bernoulli policies have no reparameterised samples
    config.update(options)
    return registries().agents.build(
        config,
        obs_space=spaces.Dict({"observation": spaces.Box(-1.0, 1.0, (OBS_DIM,))}),
        rl2_space=spaces.Box(-np.inf, np.inf, (1 + action_dim(action_space),)),
        action_space=action_space,
        max_seq_len=max_seq_len,
        tstep_encoder=registries().tstep_encoders.builder(TINY_TSTEP),
        traj_encoder=registries().traj_encoders.builder(traj_encoder),
    )


def random_batch(
    action_space: spaces.Space | str, batch_size: int = 3, length: int = 6, seed: int = 0
) -> Batch:
    """A random torch batch whose first row is padded after 4 observations and whose second row terminates."""
    action_space = as_space(action_space)
    gen = torch.Generator().manual_seed(seed)
    dim = action_dim(action_space)
    steps = length - 1
    if isinstance(action_space, spaces.Discrete):
        actions = torch.nn.functional.one_hot(
            torch.randint(dim, (batch_size, steps), generator=gen), dim
        ).float()
    elif isinstance(action_space, spaces.MultiBinary):
        actions = torch.randint(0, 2, (batch_size, steps, dim), generator=gen).float()
    else:
        actions = torch.rand(batch_size, steps, dim, generator=gen) * 2 - 1
    mask = torch.ones(batch_size, length, dtype=torch.bool)
    mask[0, 4:] = False
    dones = torch.zeros(batch_size, steps, 1, dtype=torch.bool)
    dones[1, -1] = True
    rews = torch.randn(batch_size, steps, 1, generator=gen)
    rl2s = torch.cat((torch.zeros(batch_size, 1, 1 + dim), torch.cat((rews, actions), -1)), 1)
    obs = torch.randn(batch_size, length, OBS_DIM, generator=gen)
    # Padding is zero, as collate writes it.
    for field in (obs, rl2s):
        field[~mask] = 0.0
    rews[~mask[:, 1:]] = 0.0
    actions[~mask[:, 1:]] = 0.0
    return Batch(
        obs={"observation": obs},
        rl2s=rl2s,
        time_idxs=torch.arange(length).expand(batch_size, length)[..., None].clone(),
        rews=rews,
        dones=dones,
        actions=actions,
        mask=mask,
    )


@pytest.fixture
def make_agent() -> Callable[..., torch.nn.Module]:
    """``build_agent`` as a fixture, seeded."""

    def make(*args: Any, **kwargs: Any) -> torch.nn.Module:
        torch.manual_seed(0)
        return build_agent(*args, **kwargs)

    return make


@pytest.fixture
def make_batch() -> Callable[..., Batch]:
    """``random_batch`` as a fixture."""
    return random_batch
