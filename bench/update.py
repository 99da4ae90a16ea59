"""Gradient updates per second of the default ``agent`` on the Meta-Frozen-Lake reference model (one CPU thread).

One update = loss forward + backward + gradient clipping + AdamW step + target/copy sync, on a batch of 24
sequences of 250 steps (251 observations) with Box(4,) observations and Discrete(5) actions, for the
timestep encoder ``ff`` (1 layer, 128 hidden, 64 out) and each trajectory encoder at 3 layers × 128
(``ff``, ``rnn``, ``transformer``). The agent is the default one: 4 critics, 7 gammas, PopArt, binary filter.

Ratios against AMAGO count only when both sides run in one session on one machine: ``bench/vs_amago.py`` does
that. This script times amago's update alone (a quick check while working on the update's cost).

Run: ``.venv/bin/python bench/update.py`` (``--updates`` to trade time for stability, ``--encoders`` to pick).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch
from gymnasium import spaces

from amago_core.data.batch import Batch
from amago_core.plugins import registries

BATCH, STEPS, ACTIONS = 24, 250, 5
TSTEP = {"kind": "ff", "n_layers": 1, "d_hidden": 128, "d_output": 64}
TRAJ = {
    "ff": {"kind": "ff", "d_model": 128, "n_layers": 3},
    "rnn": {"kind": "rnn", "d_hidden": 128, "d_output": 128, "n_layers": 3},
    "transformer": {"kind": "transformer", "d_model": 128, "n_heads": 8, "d_ff": 512, "n_layers": 3},
}


def random_batch(rng: np.random.Generator) -> Batch:
    """A Meta-Frozen-Lake-shaped batch; a third of the rows end early (padding) and some steps terminate."""
    length = STEPS + 1
    lengths = np.where(rng.random(BATCH) < 1 / 3, rng.integers(20, length, BATCH), length)
    mask = np.arange(length)[None, :] < lengths[:, None]
    actions = np.eye(ACTIONS, dtype=np.float32)[rng.integers(0, ACTIONS, (BATCH, STEPS))]
    rews = rng.random((BATCH, STEPS, 1)).astype(np.float32)
    rl2s = np.concatenate(
        [np.zeros((BATCH, 1, 1 + ACTIONS), np.float32), np.concatenate([rews, actions], -1)], 1
    )
    batch = Batch(
        obs={"observation": rng.integers(0, 5, (BATCH, length, 4)).astype(np.float32)},
        rl2s=rl2s,
        time_idxs=np.broadcast_to(np.arange(length)[None, :, None], (BATCH, length, 1)).copy(),
        rews=rews,
        dones=rng.random((BATCH, STEPS, 1)) < 0.01,
        actions=actions,
        mask=mask,
    )
    return batch.to_torch()


def updates_per_second(traj: str, updates: int, warmup: int) -> float:
    """Times ``updates`` full gradient updates after ``warmup`` untimed ones."""
    obs_space = spaces.Dict({"observation": spaces.Box(0, 4, (4,))})
    rl2_space = spaces.Box(-np.inf, np.inf, (1 + ACTIONS,))
    agent = (
        registries()
        .agents.build(
            "agent",
            obs_space=obs_space,
            rl2_space=rl2_space,
            action_space=spaces.Discrete(ACTIONS),
            max_seq_len=STEPS,
            tstep_encoder=registries().tstep_encoders.builder(TSTEP),
            traj_encoder=registries().traj_encoders.builder(TRAJ[traj]),
        )
        .train()
    )
    params = list(agent.trainable_parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=1e-3)
    batch = random_batch(np.random.default_rng(0))

    def update() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss, _ = agent.loss(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        agent.soft_sync_targets()

    for _ in range(warmup):
        update()
    start = time.perf_counter()
    for _ in range(updates):
        update()
    return updates / (time.perf_counter() - start)


def main() -> None:
    """Prints updates/s per trajectory encoder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=5, help="timed updates per encoder")
    parser.add_argument("--warmup", type=int, default=2, help="untimed updates first")
    parser.add_argument("--encoders", nargs="+", default=list(TRAJ), choices=list(TRAJ))
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, 1 thread, load average {os.getloadavg()[0]:.2f}")
    print(f"{'traj encoder':<14}{'updates/s':>10}")
    for traj in args.encoders:
        rate = updates_per_second(traj, args.updates, args.warmup)
        print(f"{traj:<14}{rate:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
