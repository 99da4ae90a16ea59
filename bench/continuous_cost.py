"""What a continuous-action update costs against a discrete one of the same sizes, in amago and in AMAGO v3.3.0.

The Wind CPU recipe's model (``examples/recipes/wind-cpu.toml``: ff timestep encoder 128, Transformer 3 x 128 with
d_ff 512, 64-step windows, batch 24, the default agent's heads: 4 critics, 7 gammas) is built twice, for
``Discrete(5)`` and for ``Box(2,)`` actions, and one gradient update (loss forward + backward + gradient clipping +
AdamW step + target sync) of each is timed, the two interleaved so that both see the same machine load. It prints
the median time per update with its spread, the FLOPs of one update (``bench/flops.py``) and the GFLOP/s reached.

Why a continuous update costs more: a discrete critic sees the state once and outputs a value for every (gamma,
action); a continuous critic takes the action as an input, so it runs once per (gamma, action sample) row: 7x the
rows of the critics' hidden layers, evaluated for the dataset's actions, the policy's and the target policy's. AMAGO
does the same; ``--amago-venv`` (a venv with AMAGO v3.3.0, e.g. ``.venv-amago-ref``) times AMAGO's own update of the
same model in the same session for comparison.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python bench/continuous_cost.py [--updates 8] [--amago-venv .venv-amago-ref]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROWS, STEPS = 24, 64
OBS_DIM = 4
ACTIONS = {"discrete": 5, "continuous": 2}
"""Action width per kind: Discrete(5) (one-hot) or Box(2,) (Wind's)."""
TSTEP = {"kind": "ff", "d_hidden": 128, "d_output": 128}
TRAJ = {"kind": "transformer", "n_layers": 3, "d_model": 128, "d_ff": 512}
HEADS = {"d_hidden": 256, "n_layers": 2}  # the default agent's actor and critics (amago's and AMAGO's)


def random_arrays(kind: str) -> dict[str, np.ndarray]:
    """One batch of ``ROWS`` full 64-step windows (no padding) with random observations, rewards and actions."""
    rng = np.random.default_rng(0)
    width, length = ACTIONS[kind], STEPS + 1
    if kind == "discrete":
        actions = np.eye(width, dtype=np.float32)[rng.integers(0, width, (ROWS, STEPS))]
    else:
        actions = rng.uniform(-0.9, 0.9, (ROWS, STEPS, width)).astype(np.float32)
    rews = rng.random((ROWS, STEPS, 1)).astype(np.float32)
    first = np.zeros((ROWS, 1, 1 + width), np.float32)
    return {
        "obs": rng.normal(size=(ROWS, length, OBS_DIM)).astype(np.float32),
        "rl2s": np.concatenate([first, np.concatenate([rews, actions], -1)], 1),
        "time_idxs": np.broadcast_to(np.arange(length)[None, :, None], (ROWS, length, 1)).copy(),
        "rews": rews,
        "dones": rng.random((ROWS, STEPS, 1)) < 0.01,
        "actions": actions,
    }


def amago_update(kind: str) -> Callable[[], None]:
    """amago's update of the model for ``kind`` actions."""
    import torch
    from gymnasium import spaces

    from amago_core.data.batch import Batch
    from amago_core.plugins import registries

    width = ACTIONS[kind]
    action_space = spaces.Discrete(width) if kind == "discrete" else spaces.Box(-1.0, 1.0, (width,))
    agent = (
        registries()
        .agents.build(
            {"kind": "agent", "actor": HEADS, "critic": HEADS},
            obs_space=spaces.Dict({"observation": spaces.Box(-5.0, 5.0, (OBS_DIM,))}),
            rl2_space=spaces.Box(-np.inf, np.inf, (1 + width,)),
            action_space=action_space,
            max_seq_len=STEPS,
            tstep_encoder=registries().tstep_encoders.builder(TSTEP),
            traj_encoder=registries().traj_encoders.builder(TRAJ),
        )
        .train()
    )
    arrays = random_arrays(kind)
    mask = np.ones((ROWS, STEPS + 1), bool)
    batch = Batch(obs={"observation": arrays.pop("obs")}, mask=mask, **arrays).to_torch(torch.device("cpu"))
    params = list(agent.trainable_parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4)

    def update() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss, _ = agent.loss(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        agent.soft_sync_targets()

    return update


def reference_update(kind: str) -> Callable[[], None]:
    """AMAGO v3.3.0's update of the same model (run by its own venv's interpreter)."""
    import parity_amago_ref as ref
    import torch

    from amago.loading import Batch

    action = {"type": "discrete", "n": 5} if kind == "discrete" else {"type": "box", "dim": ACTIONS[kind]}
    case = {"seed": 0, "obs_dim": OBS_DIM, "action": action, "heads": HEADS, "agent": "agent"}
    agent = ref.build_agent({**case, "tstep": TSTEP, "traj": TRAJ, "max_seq_len": STEPS}).train()
    arrays = {key: torch.from_numpy(value) for key, value in random_arrays(kind).items()}
    batch = Batch(
        obs={"observation": arrays["obs"]},
        rl2s=arrays["rl2s"],
        rews=arrays["rews"],
        dones=arrays["dones"],
        actions=arrays["actions"],
        time_idxs=arrays["time_idxs"].long(),
    )
    params = [p for p in agent.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-4)

    def update() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = agent(batch, log_step=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        agent.soft_sync_targets()

    return update


def measure(side: str, updates: int, warmup: int) -> dict[str, Any]:
    """Both kinds' updates on ``side`` (``amago`` or ``amago-3.3.0``), interleaved: seconds per update and FLOPs."""
    import torch

    sys.path.insert(0, str(HERE))  # flops.py, parity_amago_ref.py
    import flops

    torch.set_num_threads(1)
    torch.manual_seed(0)
    build = amago_update if side == "amago" else reference_update
    updates_of = {kind: build(kind) for kind in ACTIONS}
    for update in updates_of.values():
        for _ in range(warmup):
            update()
    seconds: dict[str, list[float]] = {kind: [] for kind in ACTIONS}
    for _ in range(updates):
        for kind, update in updates_of.items():
            start = time.perf_counter()
            update()
            seconds[kind].append(time.perf_counter() - start)
    counted = {kind: flops.count_flops(update)[0] for kind, update in updates_of.items()}
    return {"side": side, "seconds": seconds, "flops": counted}


def run_side(python: Path | None, updates: int, warmup: int) -> dict[str, Any]:
    """:func:`measure` in a fresh interpreter: this one (amago) or ``python`` (a venv with AMAGO v3.3.0)."""
    side = "amago" if python is None else "amago-3.3.0"
    job = json.dumps({"side": side, "updates": updates, "warmup": warmup})
    env = {**os.environ, "TORCH_COMPILE_DISABLE": "1"}  # AMAGO's compile decorators crash on a CPU
    done = subprocess.run(
        [str(python or sys.executable), __file__, "--child", job],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        sys.exit(f"the {side} side failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=8, help="timed updates per kind")
    parser.add_argument("--warmup", type=int, default=2, help="untimed updates first")
    parser.add_argument("--amago-venv", type=Path, help="a venv with AMAGO v3.3.0: its update is timed too")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        job = json.loads(args.child)
        print(json.dumps(measure(job["side"], job["updates"], job["warmup"])), flush=True)
        return
    print(
        f"model: ff {TSTEP['d_hidden']}/{TSTEP['d_output']}, transformer {TRAJ['n_layers']} x {TRAJ['d_model']} "
        f"(d_ff {TRAJ['d_ff']}), batch {ROWS} x {STEPS} steps, heads {HEADS['n_layers']} x {HEADS['d_hidden']}; "
        f"1 torch thread; load average {os.getloadavg()[0]:.2f}"
    )
    sides = [run_side(None, args.updates, args.warmup)]
    if args.amago_venv is not None:
        sides.append(run_side(args.amago_venv / "bin" / "python", args.updates, args.warmup))
    print(f"{'side':<13}{'actions':<12}{'ms/update [min-max]':>24}{'GFLOP/update':>14}{'GFLOP/s':>10}")
    for result in sides:
        for kind in ACTIONS:
            times = result["seconds"][kind]
            median, flop = statistics.median(times), result["flops"][kind]
            spread = f"{median * 1e3:.0f} [{min(times) * 1e3:.0f}-{max(times) * 1e3:.0f}]"
            print(
                f"{result['side']:<13}{kind:<12}{spread:>24}{flop / 1e9:>14.2f}{flop / median / 1e9:>10.1f}"
            )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
