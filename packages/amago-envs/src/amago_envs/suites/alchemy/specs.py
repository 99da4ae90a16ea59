"""Spec and config of the ``alchemy`` env suite (torch-, gymnasium- and dm_alchemy-free).

DeepMind's ``dm_alchemy`` is published on GitHub only (no PyPI release), so amago-envs has no extra for it:
``amago list envs`` shows the suite as missing with the git install command, and using it fails with that
one line.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.plugins.spec import ComponentSpec
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task

ALCHEMY_LEVEL = "perceptual_mapping_randomized_with_rotation_and_random_bottleneck"
"""The procedurally generated level AMAGO trains on (stone features may be rotated 45°, random bottlenecks)."""

ALCHEMY_INSTALL_HINT = "pip install git+https://github.com/deepmind/dm_alchemy"
"""dm_alchemy has no PyPI release; this installs it (and dm_env) from its repository."""

ROLLOUT_HORIZON = 200
"""10 trials of 20 steps: the length of one symbolic Alchemy episode with the default options."""


class AlchemyConfig(EnvSuiteConfig):
    """Symbolic Alchemy: a new chemistry per episode, discovered over ``num_trials`` trials."""

    kind: Literal["alchemy"] = "alchemy"
    """Registered name of this env suite."""

    num_trials: int = Field(10, ge=1)
    """Trials per episode, all on the same chemistry (new stones and potions each trial)."""

    max_steps_per_trial: int = Field(20, ge=1)
    """Steps before a trial ends by itself."""

    observe_used: bool = True
    """Add a per-slot "already used" feature to the observation."""

    end_trial_action: bool = False
    """Give the agent an action that ends the trial early."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("alchemy", task, ())


ALCHEMY = ComponentSpec(
    name="alchemy",
    group=ENV_SUITES_GROUP,
    summary="Symbolic DM Alchemy meta-RL (new chemistry per episode); dm_alchemy is git-only.",
    config=AlchemyConfig,
    factory="amago_envs.suites.alchemy.suite:AlchemySuite",
    requires=("dm_alchemy", "dm_env"),
    install_hint=ALCHEMY_INSTALL_HINT,
    presets={
        # Example 06: bilevel exploration over the 200-step episode (annealed over 2.5M steps), reward
        # multiplier 100, ff timestep encoder 2x256 -> 256, whole episodes per file and per sequence.
        "*": {
            "exploration": {
                "kind": "bilevel",
                "rollout_horizon": ROLLOUT_HORIZON,
                "steps_anneal": 2_500_000,
            },
            "agent": {"kind": "agent", "reward_multiplier": 100.0},
            "tstep_encoder": {"kind": "ff", "n_layers": 2, "d_hidden": 256, "d_output": 256},
            "run": {"max_seq_len": ROLLOUT_HORIZON + 1},
            "replay": {"traj_save_len": ROLLOUT_HORIZON + 1},
            "schedule": {"val_timesteps_per_epoch": 2000},
        },
    },
)
