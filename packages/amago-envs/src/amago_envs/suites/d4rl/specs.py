"""Spec and config of the ``d4rl`` env suite (torch-, gymnasium- and minari-free: listing loads it).

The recipe (AMAGO's example 14): convert a minari dataset into a run's protected buffer with
``python -m amago_envs.suites.d4rl.convert DATASET_ID --ckpt-base-dir runs --run-name NAME``, then train with
``amago run --env d4rl -o env.dataset=DATASET_ID --name NAME``. The preset trains offline only; set
``schedule.start_collecting_at_epoch=N`` to add online data from epoch N (offline -> online).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.presets import slot_with_alternative
from amago_core.plugins.spec import ComponentSpec
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task

NEVER_COLLECT = 10**9
"""``start_collecting_at_epoch`` of the offline-only preset: an epoch no run reaches."""


class D4RLConfig(EnvSuiteConfig):
    """A minari dataset's environment, for evaluating (and fine-tuning) agents trained on that dataset."""

    kind: Literal["d4rl"] = "d4rl"
    """Registered name of this env suite."""

    dataset: str | None = None
    """The minari dataset id (``mujoco/halfcheetah/medium-v0``); must be available locally (minari's
    ``MINARI_DATASETS_PATH``). Required to make envs."""

    eval_env: bool = True
    """Use the dataset's evaluation environment (falls back to its collection environment when it has none)."""

    max_episode_steps: int | None = Field(None, ge=1)
    """Step limit of the online episodes; None keeps the dataset environment's own limit."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("d4rl", task, ())


D4RL_PRESET: dict[str, object] = {
    "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 128, "d_output": 128},
    "agent": slot_with_alternative(
        "agent",
        {
            "online_coeff": 0.0,
            "offline_coeff": 1.0,
            "gamma": 0.997,
            "reward_multiplier": 1.0,
            "num_critics": 5,
            "num_actions_for_value_in_critic_loss": 3,
            "num_actions_for_value_in_actor_loss": 5,
            "fbc_filter": {"type": "exp"},
            "actor": {"d_hidden": 128},
            "critic": {"d_hidden": 128},
            "continuous_dist": {"type": "beta"},
        },
        alternative="multitask",
        alternative_options={"output_bins": 64},  # example 14's two-hot critic
    ),
    "exploration": {"kind": "egreedy", "eps_start": 0.05, "eps_end": 0.01, "steps_anneal": 15_000},
    "run": {"max_seq_len": 32},
    "replay": {"padded_sampling": "right"},
    "rollout": {"sample_actions_train": False, "sample_actions_val": False},
    "schedule": {"start_collecting_at_epoch": NEVER_COLLECT},
}
"""Example 14's hyperparameters (offline only by default; its reward multiplier is 100 for datasets whose
D4RL reference max return is <= 10: set ``agent.reward_multiplier=100`` for those)."""

D4RL = ComponentSpec(
    name="d4rl",
    group=ENV_SUITES_GROUP,
    summary="D4RL-style offline RL: minari datasets into the protected buffer, their envs for evaluation.",
    config=D4RLConfig,
    factory="amago_envs.suites.d4rl.suite:D4RLSuite",
    requires=("minari",),
    install_hint='pip install "amago-envs[d4rl]"',
    presets={"*": D4RL_PRESET},
)
