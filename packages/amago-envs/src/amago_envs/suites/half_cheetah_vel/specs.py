"""Spec and config of the ``half_cheetah_vel`` env suite (torch-, gymnasium- and mujoco-free)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.plugins.spec import ComponentSpec
from amago_envs.suites.attempts import split_attempts
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task


class HalfCheetahVelConfig(EnvSuiteConfig):
    """HalfCheetahVel: run at a hidden target velocity, inferred from rewards (one episode per target by default,
    or ``k_train`` / ``k_eval`` attempts at each target)."""

    kind: Literal["half_cheetah_vel"] = "half_cheetah_vel"
    """Registered name of this env suite."""

    task_min_velocity: float = Field(0.0, ge=0.0)
    """Lowest target velocity drawn per reset."""

    task_max_velocity: float = Field(3.0, ge=0.0)
    """Highest target velocity drawn per reset."""

    ctrl_cost_weight: float = Field(0.05, ge=0.0)
    """Weight of the squared-action cost subtracted from the reward (VariBAD's 0.05)."""

    max_episode_steps: int = Field(1000, ge=1)
    """Steps of one attempt (with one attempt per trial, the default: steps before the episode is truncated)."""

    k_train: int = Field(1, ge=1)
    """Attempts per trial (one target velocity, the cheetah reset between attempts) in the train split. With
    more than one attempt in any split, observations gain an attempt-start flag (in every split alike)."""

    k_eval: int = Field(1, ge=1)
    """Attempts per trial in the val and test splits; more than ``k_train`` probes whether the agent keeps
    adapting past the attempts it was trained on."""

    attempt_options: ClassVar[tuple[str, ...]] = ("k_train", "k_eval")
    """The options ``amago eval --attempts K`` sets to K (attempts per trial, in every split)."""
    attempt_metrics: ClassVar[dict[str, str]] = {"return": "Trial {i} Return"}
    """Per-attempt metrics this suite logs, by name: info keys with ``{i}`` for the 0-based attempt (``{n}``:
    1-based), which ``amago eval --attempts`` reports attempt by attempt."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("half_cheetah_vel", task, ())

    def attempts(self, split: str) -> int:
        """Attempts per trial in ``split``: ``k_train`` for ``train``, ``k_eval`` for ``val`` and ``test``.

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        return split_attempts(split, self.k_train, self.k_eval)

    def episode_steps(self) -> int:
        """One training trial: ``k_train`` attempts of ``max_episode_steps`` (the preset's 32-step context and
        192-step files are windows of it)."""
        return self.k_train * self.max_episode_steps

    def eval_episode_steps(self) -> int:
        """One val or test trial: ``k_eval`` attempts of ``max_episode_steps`` (the val horizon follows it)."""
        return self.k_eval * self.max_episode_steps

    @model_validator(mode="after")
    def _ordered_range(self) -> HalfCheetahVelConfig:
        if self.task_min_velocity > self.task_max_velocity:
            msg = (
                f"task_min_velocity={self.task_min_velocity} exceeds task_max_velocity={self.task_max_velocity}; "
                "swap or lower one of them."
            )
            raise ValueError(msg)
        return self


_SEQ_LEN = 32  # example 12's --policy_seq_len
HALF_CHEETAH_VEL_PRESET: dict[str, object] = {
    "agent": {"kind": "agent", "reward_multiplier": 1.0, "gamma": 0.99, "tau": 0.005},
    "exploration": {"kind": "egreedy", "steps_anneal": 500_000},
    "run": {"max_seq_len": _SEQ_LEN},
    "replay": {"traj_save_len": 6 * _SEQ_LEN},
    "schedule": {"val_timesteps_per_epoch": 1001},
    "optim": {"learning_rate": 3e-4, "grad_clip": 2.0},
}
"""Example 12's hyperparameters (policy sequence length 32, one evaluation episode of 1000 steps per actor)."""

HALF_CHEETAH_VEL = ComponentSpec(
    name="half_cheetah_vel",
    group=ENV_SUITES_GROUP,
    summary="HalfCheetahVel: MuJoCo HalfCheetah with a hidden target velocity per episode (meta-RL).",
    config=HalfCheetahVelConfig,
    factory="amago_envs.suites.half_cheetah_vel.suite:HalfCheetahVelSuite",
    requires=("mujoco",),
    install_hint='pip install "amago-envs[half-cheetah-vel]"',
    presets={"*": HALF_CHEETAH_VEL_PRESET},
)
