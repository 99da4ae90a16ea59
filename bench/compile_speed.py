"""``run.compile`` on and off: updates/s and rollout policy steps/s, and the compile time, per trajectory encoder.

Small configs (one CPU thread unless ``--threads``): the default ``agent`` with an ``ff`` timestep encoder and a
2-layer × 64 trajectory encoder (``ff``, ``rnn`` (GRU), ``transformer``, ``mamba`` on its pure-PyTorch scan), an
update on a batch of 8 sequences of 64 steps, and a rollout step of 12 envs one timestep at a time (the hidden
state carried, as ``run_policy`` does). "compile s" is the first compiled calls minus as many eager ones: the time a
run pays before compiling can pay back. The "on" side compiles as ``run.compile=on`` does (the agent's
``_call_impl``, as ``Learner`` does; ``get_actions`` through ``CompiledOrEager``, as ``run_policy`` does).
Inductor's compiled cache (``/tmp/torchinductor_$USER``) survives the process: a second run compiles faster.

Run: ``.venv/bin/python bench/compile_speed.py`` (``--encoders``, ``--updates``, ``--steps`` to trade time).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from amago_core.experiment.fast_torch import CompiledOrEager
from amago_core.plugins import registries

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/update.py, a sibling script module
from update import ACTIONS, random_batch  # the same Meta-Frozen-Lake shapes

BATCH, STEPS, ENVS = 8, 64, 12
TSTEP = {"kind": "ff", "n_layers": 1, "d_hidden": 64, "d_output": 32}
TRAJ = {
    "ff": {"kind": "ff", "d_model": 64, "n_layers": 2},
    "rnn": {"kind": "rnn", "d_hidden": 64, "d_output": 64, "n_layers": 2},
    "transformer": {"kind": "transformer", "d_model": 64, "n_heads": 4, "d_ff": 256, "n_layers": 2},
    "mamba": {"kind": "mamba", "d_model": 64, "n_layers": 2, "use_kernels": False},
}


def build_agent(traj: str, device: str) -> Any:
    """The default agent with the small ``traj`` encoder, on ``device``."""
    torch.manual_seed(0)
    agent: Any = registries().agents.build(
        "agent",
        obs_space=spaces.Dict({"observation": spaces.Box(0, 4, (4,))}),
        rl2_space=spaces.Box(-np.inf, np.inf, (1 + ACTIONS,)),
        action_space=spaces.Discrete(ACTIONS),
        max_seq_len=STEPS,
        tstep_encoder=registries().tstep_encoders.builder(TSTEP),
        traj_encoder=registries().traj_encoders.builder(TRAJ[traj]),
    )
    return agent.to(device)


def timed(fn: Callable[[], None], first: int, repeats: int) -> tuple[float, float]:
    """(seconds of the first ``first`` calls, calls/s over ``repeats`` more)."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else lambda: None
    start = time.perf_counter()
    for _ in range(first):
        fn()
    sync()
    warm = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync()
    return warm, repeats / (time.perf_counter() - start)


def update_rates(traj: str, compile: bool, updates: int, device: str) -> tuple[float, float]:
    """(first two updates' seconds, updates/s) of one update loop."""
    agent = build_agent(traj, device).train()
    if compile:
        agent._compiled_call_impl = torch.compile(agent._call_impl)  # what Learner(compile=True) does
    params = list(agent.trainable_parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=1e-3)
    batch = random_batch(np.random.default_rng(0), device, rows=BATCH, steps=STEPS, padded=False)

    def update() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss, _ = agent(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        agent.soft_sync_targets()

    return timed(update, 2, updates)


def step_rates(traj: str, compile: bool, steps: int, device: str) -> tuple[float, float]:
    """(first ``STEPS // 4`` steps' seconds, policy steps/s after them) of one rollout from a fresh memory."""
    agent = build_agent(traj, device).eval()
    get_actions = CompiledOrEager(type(agent).get_actions, "rollout policy step") if compile else None
    rng = np.random.default_rng(1)
    state = {"hidden": agent.init_hidden_state(ENVS, device), "t": 0}

    def step() -> None:
        obs = {
            "observation": torch.from_numpy(rng.integers(0, 5, (ENVS, 1, 4)).astype(np.float32)).to(device)
        }
        rl2 = torch.from_numpy(rng.random((ENVS, 1, 1 + ACTIONS)).astype(np.float32)).to(device)
        time_idx = torch.full((ENVS, 1, 1), state["t"] % STEPS, dtype=torch.int64, device=device)
        with torch.no_grad():
            if get_actions is None:
                _, state["hidden"] = agent.get_actions(obs, rl2, time_idx, state["hidden"])
            else:
                _, state["hidden"] = get_actions(agent, obs, rl2, time_idx, state["hidden"])
        state["t"] += 1
        if state["t"] % STEPS == 0:  # a context's worth: start over as an episode end would
            state["hidden"] = agent.init_hidden_state(ENVS, device)

    warm_steps = STEPS // 4
    return timed(step, warm_steps, steps)


def cpu_flags() -> str:
    """The vector extensions the CPU reports (what inductor's C++ code can use)."""
    try:
        with open("/proc/cpuinfo") as info:
            flags = next(line for line in info if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    return " ".join(f for f in ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile") if f in flags)


def main() -> None:
    """Prints the on/off table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoders", nargs="+", default=list(TRAJ), choices=list(TRAJ))
    parser.add_argument("--updates", type=int, default=5, help="timed updates per encoder and setting")
    parser.add_argument("--steps", type=int, default=48, help="timed policy steps per encoder and setting")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (auto's rule differs by device kind)")
    parser.add_argument("--parts", nargs="+", default=["update", "rollout"], choices=["update", "rollout"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), {platform.processor() or platform.machine()}, "
        f"flags: {cpu_flags()}, device {args.device}, load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'encoder':<12}{'upd/s off':>10}{'upd/s on':>10}{'compile s':>10}"
        f"{'step/s off':>11}{'step/s on':>10}{'compile s':>10}"
    )
    for traj in args.encoders:
        skipped = (0.0, float("nan"))
        update = "update" in args.parts
        rollout = "rollout" in args.parts
        warm_off, upd_off = update_rates(traj, False, args.updates, args.device) if update else skipped
        warm_on, upd_on = update_rates(traj, True, args.updates, args.device) if update else skipped
        swarm_off, step_off = step_rates(traj, False, args.steps, args.device) if rollout else skipped
        swarm_on, step_on = step_rates(traj, True, args.steps, args.device) if rollout else skipped
        print(
            f"{traj:<12}{upd_off:>10.2f}{upd_on:>10.2f}{warm_on - warm_off:>10.1f}"
            f"{step_off:>11.1f}{step_on:>10.1f}{swarm_on - swarm_off:>10.1f}",
            flush=True,
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
