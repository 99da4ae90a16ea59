"""What a factored MultiDiscrete action costs against the same action space flattened into one Discrete.

Builds the combination-lock preset's agent (ff timestep encoder 64, GRU 64, default agent heads) twice: for
``MultiDiscrete([symbols] * dials)`` (one categorical per dial, critics that take the dials' one-hots) and for
``Discrete(symbols ** dials)`` (one categorical over every combination, one critic output per combination), and
times one gradient update (loss forward + backward + AdamW step) of each, interleaved so that both see the same
machine load. Prints the trainable parameters and the median time per update of each.

Run: ``.venv/bin/python bench/multidiscrete_cost.py [--dials 3 --symbols 4 --updates 60]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch
from gymnasium import spaces

from amago_core.data.batch import Batch
from amago_core.plugins import registries

BATCH, LENGTH = 32, 11  # the preset's batch; 10 steps per sequence plus the first observation
TSTEP = {"kind": "ff", "n_layers": 1, "d_hidden": 64, "d_output": 64}
TRAJ = {"kind": "rnn", "d_hidden": 64, "n_layers": 1, "d_output": 64}


def build(action_space: spaces.Space, obs_dim: int, **options: object) -> torch.nn.Module:
    width = (
        int(np.sum(action_space.nvec))
        if isinstance(action_space, spaces.MultiDiscrete)
        else int(action_space.n)
    )
    return registries().agents.build(
        {"kind": "agent", **options},
        obs_space=spaces.Dict({"observation": spaces.Box(0.0, 1.0, (obs_dim,))}),
        rl2_space=spaces.Box(-np.inf, np.inf, (1 + width,)),
        action_space=action_space,
        max_seq_len=LENGTH - 1,
        tstep_encoder=registries().tstep_encoders.builder(TSTEP),
        traj_encoder=registries().traj_encoders.builder(TRAJ),
    )


def batch(width: int, sizes: list[int], rng: np.random.Generator) -> Batch:
    """Random one-hot actions: one per dial (MultiDiscrete) or one over every combination (``sizes == [width]``)."""
    choice = [rng.integers(0, k, (BATCH, LENGTH - 1)) for k in sizes]
    actions = np.concatenate([np.eye(k, dtype=np.float32)[c] for k, c in zip(sizes, choice, strict=True)], -1)
    rews = rng.random((BATCH, LENGTH - 1, 1)).astype(np.float32)
    rl2 = np.concatenate(
        [np.zeros((BATCH, 1, 1 + width), np.float32), np.concatenate([rews, actions], -1)], 1
    )
    return Batch(
        obs={"observation": rng.random((BATCH, LENGTH, OBS_DIM)).astype(np.float32)},
        rl2s=rl2,
        time_idxs=np.broadcast_to(np.arange(LENGTH)[None, :, None], (BATCH, LENGTH, 1)).copy(),
        rews=rews,
        dones=np.zeros((BATCH, LENGTH - 1, 1), bool),
        actions=actions,
        mask=np.ones((BATCH, LENGTH), bool),
    ).to_torch()


def main() -> None:
    global OBS_DIM
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dials", type=int, default=3)
    parser.add_argument("--symbols", type=int, default=4)
    parser.add_argument("--updates", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dials, symbols = args.dials, args.symbols
    OBS_DIM = dials * symbols + dials  # the lock's observation: the code once, then each dial's right/wrong
    rng = np.random.default_rng(0)
    flat = spaces.Discrete(symbols**dials)
    cases = {
        f"MultiDiscrete({[symbols] * dials})": (
            spaces.MultiDiscrete([symbols] * dials),
            [symbols] * dials,
            {},
        ),
        f"Discrete({symbols**dials})": (flat, [symbols**dials], {}),
        # The flat space with action-input critics, as the factored policy needs: separates the two costs.
        f"Discrete({symbols**dials}) one-hot critics": (
            flat,
            [symbols**dials],
            {"discrete_like_continuous": True},
        ),
    }
    agents, batches, optims, times = {}, {}, {}, {}
    for name, (space, sizes, options) in cases.items():
        agents[name] = build(space, OBS_DIM, **options)
        batches[name] = batch(sum(sizes), sizes, rng)
        optims[name] = torch.optim.AdamW(agents[name].parameters(), lr=1e-4)
        times[name] = []
    for step in range(args.updates + 5):
        for name, agent in agents.items():
            start = time.perf_counter()
            loss, _ = agent.loss(batches[name])
            optims[name].zero_grad()
            loss.backward()
            optims[name].step()
            if step >= 5:  # warm-up
                times[name].append(time.perf_counter() - start)
    print(f"load average {os.getloadavg()[0]:.2f}; batch {BATCH} x {LENGTH - 1} steps; one torch thread")
    for name, agent in agents.items():
        params = sum(p.numel() for p in agent.parameters() if p.requires_grad)
        ms = [1000 * t for t in times[name]]
        q = statistics.quantiles(ms, n=4)
        print(
            f"{name:36s} {params:>10,} parameters  {statistics.median(ms):6.1f} ms/update (IQR {q[0]:.1f}-{q[2]:.1f})"
        )


OBS_DIM = 0

if __name__ == "__main__":
    main()
