"""``amago_on_interact_step`` and ``Experiment.on_interact_step``: called before every action while interacting.

A plugin's hook and a subclass's override both see each observation the policy acts on, before it acts, in
collection, validation and test, in order; a run with neither makes no call per step, and a run that only
observes records exactly what the same seeded run records without them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from amago_core.config.sources import load_config
from amago_core.experiment import Experiment
from amago_core.experiment import experiment as experiment_module

HOOKS = """
from amago_core.hooks import RunView, hookimpl

EVENTS = []

@hookimpl
def amago_on_interact_step(experiment, obs, time_idx):
    assert isinstance(experiment, RunView)
    EVENTS.append(("hook", {k: v.copy() for k, v in obs.items()}, time_idx.copy()))
"""

TIMING = ("FPS", "Time", "time")


class Spied:
    """A pool that records each observation it hands the policy (on reset and after each step) into ``events``."""

    def __init__(self, pool: Any, events: list[tuple[Any, ...]]) -> None:
        self._pool, self._events = pool, events

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def _record(self, kind: str, timestep: Any) -> None:
        self._events.append((kind, {k: v.copy() for k, v in timestep.obs.items()}, timestep.time_idx.copy()))

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        timestep = self._pool.reset(*args, **kwargs)
        self._record("given", timestep)
        return timestep

    def step(self, actions: Any) -> Any:
        self._events.append(("act",))
        result = self._pool.step(actions)
        self._record("given", result.timestep)
        return result


def _observing(events: list[tuple[Any, ...]]) -> type[Experiment]:
    """An experiment whose pools are spied on and whose ``on_interact_step`` records what it sees."""

    class Observing(Experiment):
        def interact(self, envs: Any, timesteps: int, *args: Any, **kwargs: Any) -> Any:
            events.append(("interact", kwargs.get("desc", "interact").split(" ")[0]))
            if kwargs.get("timestep") is not None:  # collection goes on from where the last epoch stopped
                Spied(envs, events)._record("given", kwargs["timestep"])
            return super().interact(Spied(envs, events), timesteps, *args, **kwargs)

        def on_interact_step(self, obs: dict[str, Any], time_idx: Any) -> None:
            events.append(("override", {k: v.copy() for k, v in obs.items()}, time_idx.copy()))

    return Observing


def _run(cls: type[Experiment], job: dict[str, Any], folder: Path) -> list[dict[str, Any]]:
    """Trains ``job`` with ``cls`` in ``folder``, tests it, and returns its records without the timings."""
    job = {**job, "run": {**job["run"], "ckpt_base_dir": str(folder), "torch_threads": 1}}
    job["logging"] = {**job["logging"], "log_interval": 1, "plot": False}
    job["schedule"] = {**job["schedule"], "epochs": 2}
    experiment = cls(load_config(base=job, environ={}))
    experiment.start()
    try:
        experiment.learn()
        experiment.evaluate_test(experiment.make_val_env, 6)
    finally:
        experiment.close()
    lines = (folder / job["run"]["name"] / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if not any(t in k for t in TIMING)} for line in lines]


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Two recorded observations are the same arrays and time indices."""
    return (
        a[1].keys() == b[1].keys()
        and all(np.array_equal(a[1][k], b[1][k]) for k in a[1])
        and np.array_equal(a[2], b[2])
    )


@pytest.mark.slow
def test_the_hook_and_the_override_see_every_observation_before_each_action_and_change_nothing(
    fake_distribution, tiny_job, tmp_path, monkeypatch
):
    # A run with no override and no plugin hands the step loop nothing to call.
    handed: list[Any] = []
    run_policy = experiment_module.run_policy

    def spy(*args: Any, **kwargs: Any) -> Any:
        handed.append(kwargs["on_step"])
        return run_policy(*args, **kwargs)

    monkeypatch.setattr(experiment_module, "run_policy", spy)
    plain = _run(Experiment, tiny_job, tmp_path / "plain")
    assert handed
    assert all(on_step is None for on_step in handed)

    fake_distribution(
        "amago-plugin-step-watcher",
        entry_points={"amago": {"watcher": "watcher_pkg.hooks"}},
        modules={"watcher_pkg/__init__.py": "", "watcher_pkg/hooks.py": HOOKS},
    )
    import watcher_pkg.hooks as watcher

    events = watcher.EVENTS  # the hook, the override and the spied pools write to one list, in call order
    observed = _run(_observing(events), tiny_job, tmp_path / "observed")
    assert observed == plain  # seeing every step changed no loss, return or count of the seeded run

    phases: dict[str, int] = {}
    steps = 0
    for i, event in enumerate(events):
        if event[0] == "interact":
            phase = event[1]
        elif event[0] == "act":
            # Before each action: the override, then the hook, each with the last observation the pool gave.
            given, override, hook = events[i - 3], events[i - 2], events[i - 1]
            assert (given[0], override[0], hook[0]) == ("given", "override", "hook"), events[i - 3 : i + 1]
            assert _same(given, override)
            assert _same(given, hook)
            phases[phase] = phases.get(phase, 0) + 1
            steps += 1
    assert sum(kind == "hook" for kind, *_ in events) == steps  # never called without an action after it
    assert sum(kind == "override" for kind, *_ in events) == steps
    # Every phase: two epochs of 8 collection and 8 validation steps, then the 6-step test.
    assert phases == {"collect": 16, "evaluate": 16, "test": 6}
    starts = np.concatenate([event[2] for event in events if event[0] == "hook"])
    assert (starts == 0).any()  # episode boundaries are visible through time_idx
    assert (starts > 0).any()


def test_an_override_alone_is_called_without_asking_the_plugins_and_neither_gives_nothing_to_call():
    from amago_core.data.timestep import Timestep
    from amago_core.experiment.acting import step_observer

    timestep = Timestep(
        obs={"x": np.arange(3.0)[:, None]},
        prev_action=np.zeros((3, 1), np.float32),
        reward=np.zeros(3, np.float32),
        time_idx=np.array([0, 4, 1]),
        terminal=np.zeros(3, bool),
    )
    seen: list[tuple[Any, Any]] = []
    observe = step_observer(lambda obs, time_idx: seen.append((obs, time_idx)), view=None)  # type: ignore[arg-type]
    assert observe is not None
    observe(timestep)
    assert seen == [(timestep.obs, timestep.time_idx)]  # the very arrays the policy acts on next
    assert step_observer(None, view=None) is None  # type: ignore[arg-type]
