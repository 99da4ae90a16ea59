"""Spec and config of the ``gym`` env suite (imports neither torch, gymnasium nor shimmy).

Env ids: ``gym-`` followed by a gymnasium id, either exactly as gymnasium spells it (``gym-CartPole-v1``,
``gym-dm_control/cartpole-swingup-v0``) or in its path-safe spelling: ``/`` and ``_`` written as ``-``, any
case (``gym-cartpole-v1``, ``gym-dm-control-cartpole-swingup-v0``). Prefer the path-safe one: the env id
becomes part of the run folder's name, where ``/`` would nest folders. The id is resolved against
``gymnasium.registry`` when the suite is built (listing it here would import gymnasium); an id two
registered ids fold to is rejected with both named. Logs and trajectory files use the resolved id in the
path-safe spelling with its case kept (``dm-control-cartpole-swingup-v0``), since file names split on ``_``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from amago_core.config.component import EnvSuiteConfig
from amago_core.plugins.spec import ComponentSpec
from amago_envs.suites.specs import ENV_SUITES_GROUP

GYM_EXAMPLE_TASKS: tuple[str, ...] = (
    "CartPole-v1",
    "Pendulum-v1",
    "Acrobot-v1",
    "MountainCarContinuous-v0",
    "dm-control-cartpole-swingup-v0",
    "dm-control-cheetah-run-v0",
)
"""A few ids `amago list envs gym` shows; any registered gymnasium id works."""

GYM_DEFAULT_TASK = "CartPole-v1"


class GymConfig(EnvSuiteConfig):
    """Any gymnasium environment by id; dict observations and Discrete, MultiBinary or Box actions."""

    kind: Literal["gym"] = "gym"
    """Registered name of this env suite."""

    make_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments passed to ``gymnasium.make`` (``{"continuous": true}`` for LunarLander...)."""

    max_episode_steps: int | None = Field(None, ge=1)
    """Step limit that replaces the id's registered one; None keeps gymnasium's."""

    flatten_dict_obs: bool = False
    """Concatenate a Dict observation into one float vector (dm_control's scalar entries included);
    False keeps one key per entry, which AMAGOEnv passes through as is."""


# Example 01 (basic gym): a 128-step context, trajectories saved 8x that long, no reward scaling, and a
# discrete policy allowed to become fully greedy (clip [1e-6, 1]) because MDPs have a best action.
GYM_PRESETS: dict[str, Any] = {
    "*": {
        "run": {"max_seq_len": 128},
        "replay": {"traj_save_len": 8 * 128},
        "agent": {
            "kind": "agent",
            "reward_multiplier": 1.0,
            "discrete_dist": {"type": "discrete", "clip_prob_low": 1e-6, "clip_prob_high": 1.0},
        },
        "schedule": {"val_timesteps_per_epoch": 1000},
    },
}

GYM = ComponentSpec(
    name="gym",
    group=ENV_SUITES_GROUP,
    summary="Any gymnasium id as gym-<id> (gym-CartPole-v1, dm_control: gym-dm-control-cheetah-run-v0).",
    config=GymConfig,
    factory="amago_envs.suites.gym_ids.suite:GymSuite",
    requires=("gymnasium",),
    install_hint='pip install "amago-envs[gym]"',
    tasks=list(GYM_EXAMPLE_TASKS),
    default_task=GYM_DEFAULT_TASK,
    presets=GYM_PRESETS,
)
