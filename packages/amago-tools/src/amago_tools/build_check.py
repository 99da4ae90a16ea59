"""The build check of `amago doctor`: each component's factory called on a tiny example input, in a child process.

`amago list` only imports spec modules (it stays fast and torch-free), so a factory that imports but raises
when called shows up here. Run as ``python -m amago_tools.build_check GROUP:NAME ...``; it prints one JSON
line per component as soon as it is checked, so a parent that stops it after a timeout keeps what was done.

The example input per group (what a run would infer), chosen to be cheap and neutral:

- traj encoders: ``tstep_dim=8, max_seq_len=8``;
- tstep encoders: the spec's ``example_obs`` (else one 5-d float key ``observation``) and a 3-d ``rl2_space``;
- agents: that observation, ``max_seq_len=8`` and the default encoders, with a Discrete(2) action space and,
  when that fails, a 2-d Box one (an agent may support one kind only);
- explorations: a one-step env with those action spaces, ``seed=0`` and the names of the config's
  ``inferred_context`` (``rollout_horizon``, ``start_step``);
- env suites: ``factory(config)`` with the default config (no env is made: that may download or start a
  simulator);
- relabelers: ``factory(config)`` plus ``seed=0`` and ``env=None`` when the config names them.

Components are built with their default config, as a run that names them without options would.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

from amago_core.plugins.groups import ComponentGroup, find_group

TINY_SEQ_LEN = 8
"""``max_seq_len`` and ``tstep_dim`` of the example input."""


def _obs_space(spec: Any) -> Any:
    import numpy as np
    from gymnasium import spaces

    if not spec.example_obs:
        return spaces.Dict({"observation": spaces.Box(-1.0, 1.0, shape=(5,), dtype=np.float32)})
    boxes: dict[str, Any] = {}
    for key, array in spec.example_obs.items():
        low, high = (0, 255) if array.dtype == "uint8" else (-1.0, 1.0)
        boxes[key] = spaces.Box(low, high, shape=array.shape, dtype=np.dtype(array.dtype))
    return spaces.Dict(boxes)


def _action_spaces() -> Iterator[Any]:
    import numpy as np
    from gymnasium import spaces

    yield spaces.Discrete(2)
    yield spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)


def _rl2_space(action_space: Any) -> Any:
    import numpy as np
    from gymnasium import spaces

    action_dim = int(getattr(action_space, "n", 0) or action_space.shape[0])
    return spaces.Box(-np.inf, np.inf, shape=(1 + action_dim,), dtype=np.float32)


def _tiny_env(action_space: Any) -> Any:
    import gymnasium
    import numpy as np

    from amago_core.rollout.env import AMAGOEnv

    class OneStep(gymnasium.Env[Any, Any]):
        observation_space = gymnasium.spaces.Box(-1.0, 1.0, shape=(5,), dtype=np.float32)

        def __init__(self) -> None:
            self.action_space = action_space

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
            super().reset(seed=seed)
            return np.zeros(5, dtype=np.float32), {}

        def step(self, action: Any) -> Any:
            return np.zeros(5, dtype=np.float32), 0.0, True, False, {}

    return AMAGOEnv(OneStep(), env_name="DoctorBuildCheck")


def _attempts(group: ComponentGroup, spec: Any, regs: Any) -> list[Callable[[], Any]]:
    """One or more ways to build ``spec`` on a tiny example input; the component passes if one works."""
    wanted = set(spec.config.inferred_context)
    if group is ComponentGroup.TRAJ_ENCODERS:
        return [lambda: spec.build(None, tstep_dim=TINY_SEQ_LEN, max_seq_len=TINY_SEQ_LEN)]
    if group is ComponentGroup.TSTEP_ENCODERS:
        rl2 = _rl2_space(next(_action_spaces()))
        return [lambda: spec.build(None, obs_space=_obs_space(spec), rl2_space=rl2)]
    if group is ComponentGroup.ENV_SUITES:
        return [lambda: spec.build(None)]
    if group is ComponentGroup.RELABELERS:
        context = {k: v for k, v in {"seed": 0, "env": None}.items() if k in wanted}
        return [lambda: spec.build(None, **context)]
    if group is ComponentGroup.AGENTS:
        tstep = regs.tstep_encoders.builder(regs.tstep_encoders.default_name())
        traj = regs.traj_encoders.builder(regs.traj_encoders.default_name())
        obs = _obs_space(spec)

        def build_agent(space: Any) -> Any:
            return spec.build(
                None,
                obs_space=obs,
                rl2_space=_rl2_space(space),
                action_space=space,
                max_seq_len=TINY_SEQ_LEN,
                tstep_encoder=tstep,
                traj_encoder=traj,
            )

        return [functools.partial(build_agent, space) for space in _action_spaces()]
    if group is ComponentGroup.EXPLORATIONS:
        extra = {k: v for k, v in {"rollout_horizon": 100, "start_step": 0}.items() if k in wanted}

        def build_exploration(space: Any) -> Any:
            return spec.build(None, env=_tiny_env(space), seed=0, **extra)

        return [functools.partial(build_exploration, space) for space in _action_spaces()]
    return []


def check(label: str, regs: Any) -> dict[str, Any]:
    """Builds the component ``label`` (``group:name``); ``{"label", "ok", "why"}``."""
    group_word, _, name = label.partition(":")
    group = find_group(group_word)
    spec = regs[group].spec(name)
    try:
        spec.load_factory()
    except Exception as exc:
        return {"label": label, "ok": False, "stage": "import", "why": _one_line(exc)}
    first_error: BaseException | None = None
    for attempt in _attempts(group, spec, regs):
        try:
            built = attempt()
        except Exception as exc:
            first_error = first_error or exc
            continue
        if built is None:
            return {"label": label, "ok": False, "stage": "build", "why": "the factory returned None"}
        return {"label": label, "ok": True, "stage": "build", "why": ""}
    if first_error is None:
        return {"label": label, "ok": True, "stage": "import", "why": ""}
    return {"label": label, "ok": False, "stage": "build", "why": _one_line(first_error)}


def _one_line(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def main(labels: list[str]) -> None:
    import warnings

    from amago_core.plugins.registry import registries

    warnings.simplefilter("ignore")  # a component's own warnings are not the doctor's business here
    regs = registries()
    for label in labels:
        try:
            result = check(label, regs)
        except Exception as exc:  # the spec itself failed: listing reports that already
            result = {"label": label, "ok": True, "stage": "spec", "why": _one_line(exc)}
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
