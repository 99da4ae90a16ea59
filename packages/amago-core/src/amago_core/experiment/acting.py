"""Acting: the policy steps a vector pool, carrying its memory across steps and resetting it per finished row."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np
import torch
from tqdm.auto import tqdm

from amago_core.data.timestep import Timestep
from amago_core.experiment.agent_api import RolloutPolicy
from amago_core.experiment.fast_torch import CompiledOrEager
from amago_core.hooks import RunView, hook_manager
from amago_core.rollout import VectorPool


def policy_input(
    timestep: Timestep, device: torch.device
) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """A pool's batched timestep as the policy's (obs, rl2, time_idx) tensors with a length-1 time dim."""
    inp = timestep.as_input()
    obs = {k: torch.from_numpy(np.ascontiguousarray(v)).to(device).unsqueeze(1) for k, v in inp.obs.items()}
    rl2 = torch.from_numpy(np.ascontiguousarray(inp.rl2, dtype=np.float32)).to(device).unsqueeze(1)
    time_idx = torch.from_numpy(np.ascontiguousarray(inp.time_idx, dtype=np.int64)).to(device).unsqueeze(1)
    return obs, rl2, time_idx


def env_actions(actions: torch.Tensor) -> np.ndarray:
    """The policy's (B, 1, ...) actions as the (B, ...) array a pool steps with."""
    return actions[:, 0].cpu().numpy()


_COMPILED_STEPS: WeakKeyDictionary[Any, CompiledOrEager] = WeakKeyDictionary()
"""Each policy's compiled ``get_actions``, kept across interactions so that it compiles once per policy."""


def compiled_step(policy: RolloutPolicy) -> CompiledOrEager:
    """``policy.get_actions`` compiled (eager from its first failure on), one per policy object.

    The unbound method is compiled and handed the policy: a bound one held in the cache would keep its policy
    (the weak key) alive for ever.
    """
    step = _COMPILED_STEPS.get(policy)
    if step is None:
        step = _COMPILED_STEPS[policy] = CompiledOrEager(type(policy).get_actions, "rollout policy step")
    return step


def step_observer(
    method: Callable[[dict[str, np.ndarray], np.ndarray], None] | None, view: RunView
) -> Callable[[Timestep], None] | None:
    """What :func:`run_policy` calls before each action: ``method`` (an ``Experiment.on_interact_step`` override),
    then every plugin's ``amago_on_interact_step``; None without either, so that the step loop calls nothing."""
    hook = hook_manager().hook.amago_on_interact_step
    plugins = bool(hook.get_hookimpls())
    if method is None and not plugins:
        return None

    def observe(timestep: Timestep) -> None:
        if method is not None:
            method(timestep.obs, timestep.time_idx)
        if plugins:
            hook(experiment=view, obs=timestep.obs, time_idx=timestep.time_idx)

    return observe


@dataclass
class Rollout:
    """Where an interaction left off, and what it saw.

    Attributes:
        hidden_state: the policy's memory after the last step (continue from it).
        timestep: the next policy input.
        stats: the pool's return and metric histories, plus ``new_frames_by_env_name`` for this interaction.
    """

    hidden_state: Any
    timestep: Timestep
    stats: dict[str, Any]


def run_policy(
    policy: RolloutPolicy,
    envs: VectorPool,
    timesteps: int,
    *,
    device: torch.device,
    caster: Callable[[], AbstractContextManager[Any]],
    hidden_state: Any = None,
    timestep: Timestep | None = None,
    sample: bool = True,
    episodes: int | None = None,
    save_on_done: bool = False,
    render: bool = False,
    progress: bool = False,
    desc: str = "interact",
    should_stop: Callable[[], bool] | None = None,
    compile: bool = False,
    on_step: Callable[[Timestep], None] | None = None,
) -> Rollout:
    """Steps ``envs`` with ``policy`` for ``timesteps`` steps, or until ``episodes`` episodes finished.

    Without a ``timestep`` to continue from, the pool is reset (its first reset seeded by the pool) and the
    memory starts fresh. After every step, the memory of the rows whose episode ended is reset. ``should_stop``
    is asked after every step (a stop signal ends the interaction early). ``compile`` runs the policy step
    compiled (:func:`compiled_step`; ``run.compile`` resolved), eagerly from the first step compilation breaks.
    ``on_step`` sees each timestep before the policy acts on it (:func:`step_observer`).
    """
    policy.eval()
    envs.reset_stats()
    if timestep is None:
        timestep = envs.reset()
        hidden_state = None
    if hidden_state is None:
        hidden_state = policy.init_hidden_state(envs.num_envs, device)
    frames_before = envs.stats().get("frames_by_env_name", {})
    finished = 0
    bar = tqdm(total=timesteps, desc=desc, leave=False, disable=not progress)
    get_actions = partial(compiled_step(policy), policy) if compile else policy.get_actions
    with torch.no_grad():
        for _ in range(timesteps):
            if on_step is not None:
                on_step(timestep)
            obs, rl2, time_idx = policy_input(timestep, device)
            with caster():
                actions, hidden_state = get_actions(obs, rl2, time_idx, hidden_state, sample=sample)
            result = envs.step(env_actions(actions))
            timestep = result.timestep
            done = np.asarray(result.done).reshape(-1)
            if done.any():
                hidden_state = policy.reset_hidden_state(hidden_state, done)
                finished += int(done.sum())
                if save_on_done:
                    envs.save_finished_trajs()
            if render and hasattr(envs, "render"):
                envs.render()
            bar.update(1)
            if episodes is not None and finished >= episodes:
                break
            if should_stop is not None and should_stop():
                break
    bar.close()
    stats = envs.stats()
    stats["new_frames_by_env_name"] = {
        name: count - frames_before.get(name, 0)
        for name, count in stats.get("frames_by_env_name", {}).items()
    }
    return Rollout(hidden_state, timestep, stats)
