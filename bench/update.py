"""Gradient updates per second of the default ``agent`` on the Meta-Frozen-Lake reference model (CPU or GPU).

One update = loss forward + backward + gradient clipping + AdamW step + target/copy sync, on a batch of 24
sequences of 250 steps (251 observations) with Box(4,) observations and Discrete(5) actions, for the
timestep encoder ``ff`` (1 layer, 128 hidden, 64 out) and each trajectory encoder at 3 layers × 128
(``ff``, ``rnn``, ``transformer``, ``mamba``). The agent is the default one: 4 critics, 7 gammas, PopArt, binary filter.

Beside updates/s it prints the FLOPs of one update and of one policy step (counted with ``FlopCounterMode``,
``bench/flops.py``; the policy step is the mean over a 250-step rollout of 16 rows with inputs made on the host
each step, so a Transformer's growing cache is in it), the GFLOP/s reached, the fp32 matmul peak measured on the same core in the same run, and the
fraction of it reached (MFU).

Ratios against AMAGO count only when both sides run in one session on one machine: ``bench/vs_amago.py`` does
that. This script times amago's update alone (a quick check while working on the update's cost).

Run: ``.venv/bin/python bench/update.py`` (``--updates`` to trade time for stability, ``--encoders`` to pick,
``--threads 1 2`` for a table per CPU thread count; ``--device cuda --precision bf16`` on a GPU, where the bf16
peak is measured too).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from gymnasium import spaces

from amago_core.data.batch import Batch
from amago_core.plugins import registries

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/flops.py, a sibling script module
import flops

BATCH, STEPS, ACTIONS = 24, 250, 5
ROWS = 16  # policy rows per acting step, as the side-by-side configuration's 16 actors
TSTEP = {"kind": "ff", "n_layers": 1, "d_hidden": 128, "d_output": 64}
TRAJ = {
    "ff": {"kind": "ff", "d_model": 128, "n_layers": 3},
    "rnn": {"kind": "rnn", "d_hidden": 128, "d_output": 128, "n_layers": 3},
    "transformer": {"kind": "transformer", "d_model": 128, "n_heads": 8, "d_ff": 512, "n_layers": 3},
    "mamba": {"kind": "mamba", "d_model": 128, "n_layers": 3},
}
DEFAULT_ENCODERS = ["ff", "rnn", "transformer"]  # mamba's pure-PyTorch scan is slow on a CPU: ask for it


def random_batch(
    rng: np.random.Generator,
    device: torch.device | str,
    *,
    rows: int = BATCH,
    steps: int = STEPS,
    padded: bool = True,
) -> Batch:
    """A Meta-Frozen-Lake-shaped batch (Box(4,) observations, Discrete(5) actions) where some steps terminate;
    with ``padded`` a third of the rows end early (padding). ``bench/compile_speed.py`` takes it unpadded."""
    length = steps + 1
    if padded:
        lengths = np.where(rng.random(rows) < 1 / 3, rng.integers(20, length, rows), length)
        mask = np.arange(length)[None, :] < lengths[:, None]
    else:
        mask = np.ones((rows, length), bool)
    actions = np.eye(ACTIONS, dtype=np.float32)[rng.integers(0, ACTIONS, (rows, steps))]
    rews = rng.random((rows, steps, 1)).astype(np.float32)
    rl2s = np.concatenate(
        [np.zeros((rows, 1, 1 + ACTIONS), np.float32), np.concatenate([rews, actions], -1)], 1
    )
    batch = Batch(
        obs={"observation": rng.integers(0, 5, (rows, length, 4)).astype(np.float32)},
        rl2s=rl2s,
        time_idxs=np.broadcast_to(np.arange(length)[None, :, None], (rows, length, 1)).copy(),
        rews=rews,
        dones=rng.random((rows, steps, 1)) < 0.01,
        actions=actions,
        mask=mask,
    )
    return batch.to_torch(torch.device(device))


def build_agent(traj: str, device: torch.device) -> torch.nn.Module:
    """The default ``agent`` on the Meta-Frozen-Lake shapes with trajectory encoder ``traj``, on ``device``."""
    obs_space = spaces.Dict({"observation": spaces.Box(0, 4, (4,))})
    rl2_space = spaces.Box(-np.inf, np.inf, (1 + ACTIONS,))
    return (
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
        .to(device)
    )


def caster(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The forward's autocast under ``precision`` (parameters and the optimiser step stay fp32)."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def sync(device: torch.device) -> None:
    """Waits for queued CUDA work, so a timer measures the work rather than its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_updates(
    traj: str, updates: int, warmup: int, device: torch.device, precision: str
) -> dict[str, float]:
    """Times ``updates`` full gradient updates after ``warmup`` untimed ones, then counts one update's FLOPs."""
    agent = build_agent(traj, device).train()
    params = list(agent.trainable_parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=1e-3)
    batch = random_batch(np.random.default_rng(0), device)

    def update() -> None:
        optimizer.zero_grad(set_to_none=True)
        with caster(device, precision):
            loss, _ = agent.loss(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        agent.soft_sync_targets()

    for _ in range(warmup):
        update()
    sync(device)
    start = time.perf_counter()
    for _ in range(updates):
        update()
    sync(device)
    elapsed = time.perf_counter() - start
    # Counted after timing: the counter's dispatch overhead must not enter the timed updates.
    update_flops, _ = flops.count_flops(update)
    return {"updates_per_s": updates / elapsed, "update_s": elapsed / updates, "update_flops": update_flops}


def measure_acting(traj: str, device: torch.device, precision: str) -> dict[str, float]:
    """One ``STEPS``-step rollout of ``ROWS`` rows through ``get_actions``: FLOPs and seconds per env step."""
    agent = build_agent(traj, device).eval()
    rng = np.random.default_rng(1)

    def rollout() -> None:
        hidden = agent.init_hidden_state(ROWS, device)
        for t in range(STEPS):
            obs = {
                "observation": torch.from_numpy(rng.integers(0, 5, (ROWS, 1, 4)).astype(np.float32)).to(
                    device
                )
            }
            rl2 = torch.from_numpy(rng.random((ROWS, 1, 1 + ACTIONS)).astype(np.float32)).to(device)
            time_idx = torch.full((ROWS, 1, 1), t, dtype=torch.long, device=device)
            with caster(device, precision):
                actions, hidden = agent.get_actions(obs, rl2, time_idx, hidden)
            actions.cpu()  # the env needs the actions on the host: each step waits for them, as in collection

    with torch.no_grad():
        rollout()  # warm-up
        times = []
        for _ in range(3):
            sync(device)
            start = time.perf_counter()
            rollout()
            sync(device)
            times.append(time.perf_counter() - start)
        step_flops, _ = flops.count_flops(rollout)
    env_steps = ROWS * STEPS
    return {"step_flops": step_flops / env_steps, "step_s": statistics.median(times) / env_steps}


def main() -> None:
    """Prints updates/s, policy steps/s, their FLOPs, GFLOP/s and MFU per trajectory encoder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=5, help="timed updates per encoder")
    parser.add_argument("--warmup", type=int, default=2, help="untimed updates first")
    parser.add_argument("--encoders", nargs="+", default=DEFAULT_ENCODERS, choices=list(TRAJ))
    parser.add_argument("--device", default="cpu", help="cpu (one thread) or cuda")
    parser.add_argument("--precision", choices=["no", "bf16"], default="no", help="autocast of the forwards")
    parser.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1],
        help="CPU torch threads, one table each (e.g. 1 2); the matmul peak is measured at each count",
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    for threads in args.threads if device.type == "cpu" else [1]:
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        where = f"{threads} thread(s)" if device.type == "cpu" else torch.cuda.get_device_name(device)
        print(
            f"torch {torch.__version__}, {where}, precision {args.precision}, "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        peak = flops.peaks(device)
        # MFU against the peak of the precision the matmuls run in (bf16 autocast: the bf16 peak where measured).
        label = "bf16" if args.precision == "bf16" and peak["bf16"] else "fp32"
        reference = peak[label]
        print(flops.peak_line(peak))
        print(
            f"{'traj encoder':<14}{'updates/s':>10}{'FLOPs/update':>15}{'update GFLOP/s (MFU)':>24}"
            f"{'policy steps/s':>16}{'FLOPs/step':>14}{'acting GFLOP/s (MFU)':>24}"
        )
        for traj in args.encoders:
            up = measure_updates(traj, args.updates, args.warmup, device, args.precision)
            act = measure_acting(traj, device, args.precision)
            print(
                f"{traj:<14}{up['updates_per_s']:>10.2f}{flops.gflop(up['update_flops']):>15}"
                f"{flops.mfu_cells(up['update_flops'], up['update_s'], reference):>24}"
                f"{1 / act['step_s']:>16.0f}{flops.gflop(act['step_flops']):>14}"
                f"{flops.mfu_cells(act['step_flops'], act['step_s'], reference):>24}",
                flush=True,
            )
        print(f"MFU against the {label} peak above; load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
