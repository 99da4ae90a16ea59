"""``optim.mixed_precision=auto`` on a device with native bf16: time each phase in both precisions at start.

Native bf16 does not mean faster (a small ff update ran 2x faster in bf16 on an avx512_bf16 CPU while a policy
step for 16 envs lost to the casts), so the start times an update and a policy step of the run's own model in
fp32 and under bf16 autocast, and each phase takes bf16 only where it measured faster
(:meth:`~amago_core.experiment.hardware.PrecisionChoice.decided`). The probe leaves the model as it found it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import torch
from gymnasium import spaces

from amago_core.data.batch import Batch
from amago_core.experiment.agent_api import RolloutPolicy
from amago_core.experiment.hardware import PhaseTimes
from amago_core.experiment.processes import torch_threads_while
from amago_core.rollout.action_mask import ACTION_MASK_KEY

PROBE_TIMESTEPS = 4096
"""Most timesteps in the probe's batch: rows are cut to fit (the ratio of the precisions is what is measured)."""
WARMUP = 1
"""Calls before timing (first-call allocations, kernel choices, autocast's weight casts)."""
REPEATS = 3
"""Timed calls per phase and precision; the median counts."""


def probe_batch(
    obs_space: spaces.Space, rl2_space: spaces.Space, action_space: spaces.Space, rows: int, length: int
) -> Batch:
    """A random batch of ``rows`` windows of ``length`` observations shaped as the run's (numpy).

    Observations are drawn within their Box bounds, actions in the buffer's format (one-hots for Discrete and
    MultiDiscrete, 0/1 for MultiBinary, [-1, 1] for Box); every step is real, every action allowed.
    """
    if not isinstance(obs_space, spaces.Dict) or rl2_space.shape is None:
        msg = f"the precision probe needs AMAGOEnv's Dict observations and a shaped rl2 space, got {obs_space!r}."
        raise TypeError(msg)
    rng = np.random.default_rng(0)
    obs = {}
    for key, space in obs_space.spaces.items():
        shape = (rows, length, *(space.shape or ()))
        if key == ACTION_MASK_KEY:
            obs[key] = np.ones(shape, dtype=space.dtype or np.bool_)
        elif isinstance(space, spaces.Box):
            low = np.broadcast_to(np.where(np.isfinite(space.low), space.low, -1.0), shape)
            high = np.broadcast_to(np.where(np.isfinite(space.high), space.high, 1.0), shape)
            obs[key] = rng.uniform(low, high).astype(space.dtype)
        else:
            obs[key] = np.broadcast_to(np.asarray(space.sample()), shape).copy()
    action_dim = int(rl2_space.shape[0]) - 1
    steps = length - 1
    if isinstance(action_space, spaces.Discrete):
        actions = np.eye(action_dim, dtype=np.float32)[rng.integers(0, action_dim, (rows, steps))]
    elif isinstance(action_space, spaces.MultiDiscrete):
        actions = np.concatenate(
            [
                np.eye(int(n), dtype=np.float32)[rng.integers(0, int(n), (rows, steps))]
                for n in action_space.nvec
            ],
            axis=-1,
        )
    elif isinstance(action_space, spaces.MultiBinary):
        actions = rng.integers(0, 2, (rows, steps, action_dim)).astype(np.float32)
    else:
        actions = rng.uniform(-1, 1, (rows, steps, action_dim)).astype(np.float32)
    rews = rng.standard_normal((rows, steps, 1)).astype(np.float32)
    rl2s = np.concatenate(
        [np.zeros((rows, 1, 1 + action_dim), np.float32), np.concatenate([rews, actions], -1)], axis=1
    )
    return Batch(
        obs=obs,
        rl2s=rl2s,
        time_idxs=np.broadcast_to(np.arange(length)[None, :, None], (rows, length, 1)).copy(),
        rews=rews,
        dones=np.zeros((rows, steps, 1), dtype=bool),
        actions=actions,
        mask=np.ones((rows, length), dtype=bool),
    )


def _median_seconds(call: Callable[[], Any], device: torch.device) -> float:
    for _ in range(WARMUP):
        call()
    timings = []
    for _ in range(REPEATS):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        started = time.perf_counter()
        call()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        timings.append(time.perf_counter() - started)
    return sorted(timings)[len(timings) // 2]


def autocast_for(device_type: str, precision: str) -> contextlib.AbstractContextManager[Any]:
    """The autocast of ``precision`` (``bf16``, ``fp16``) on ``device_type``; a no-op for fp32 (``no``)."""
    if precision not in ("bf16", "fp16"):
        return contextlib.nullcontext()
    return torch.autocast(
        device_type=device_type, dtype=torch.bfloat16 if precision == "bf16" else torch.float16
    )


def measure_phases(
    agent: torch.nn.Module,
    *,
    obs_space: spaces.Space,
    rl2_space: spaces.Space,
    action_space: spaces.Space,
    batch_size: int,
    seq_len: int,
    acting_rows: int,
    device: torch.device,
    policy_threads: int | None,
    time_update: bool = True,
) -> PhaseTimes:
    """Times an update (forward and backward of the agent's loss) and a policy step (one action for
    ``acting_rows`` envs), each in fp32 and under bf16 autocast, and leaves ``agent`` as it was.

    No optimiser step is taken; the buffers (PopArt's statistics) and torch's random streams are restored and
    the gradients cleared.

    Args:
        batch_size: the run's batch size (cut to :data:`PROBE_TIMESTEPS` timesteps, so that a large preset on a
            CPU pays seconds, not minutes).
        seq_len: the run's longest training window.
        acting_rows: envs one policy step acts for (the train pool's).
        policy_threads: torch threads a rollout uses (``rollout.policy_threads``).
        time_update: also time the update (False in a process that only acts: evaluation, collection).
    """
    length = max(2, seq_len + 1)
    rows = max(1, min(batch_size, PROBE_TIMESTEPS // length))
    batch = probe_batch(obs_space, rl2_space, action_space, rows, length).to_torch(device)
    step = probe_batch(obs_space, rl2_space, action_space, acting_rows, 1).to_torch(device)
    saved = {name: value.detach().clone() for name, value in agent.state_dict().items()}
    was_training = agent.training
    cuda = [device.index or 0] if device.type == "cuda" else []

    def update() -> None:
        loss, _ = agent(batch)
        loss.backward()
        agent.zero_grad(set_to_none=True)

    policy = cast(RolloutPolicy, agent)  # what the loop asks of an agent plugin (experiment/agent_api.py)

    def act() -> None:
        with torch.no_grad():
            hidden = policy.init_hidden_state(acting_rows, device)
            policy.get_actions(step.obs, step.rl2s, step.time_idxs, hidden)

    times: dict[str, float] = {}
    try:
        with torch.random.fork_rng(devices=cuda):
            agent.train()
            for precision in ("no", "bf16") if time_update else ():
                with autocast_for(device.type, precision):
                    times[f"update_{precision}"] = _median_seconds(update, device)
            agent.eval()
            with torch_threads_while(policy_threads):
                for precision in ("no", "bf16"):
                    with autocast_for(device.type, precision):
                        times[f"step_{precision}"] = _median_seconds(act, device)
    finally:
        agent.load_state_dict(saved)
        agent.zero_grad(set_to_none=True)
        agent.train(was_training)
    return PhaseTimes(
        step_fp32=times["step_no"],
        step_bf16=times["step_bf16"],
        update_fp32=times.get("update_no"),
        update_bf16=times.get("update_bf16"),
    )
