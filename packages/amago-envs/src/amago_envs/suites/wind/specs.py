"""Spec and config of the ``wind`` env suite (torch- and gymnasium-free: listing loads it).

Wind is AMAGO's small meta-RL navigation task (restored after v3.3.0, after pomdp-baselines): a point starts at
the origin and must reach a goal at ``(0, 1)`` while a wind it never observes pushes it every step. A trial is
``k`` attempts (inner episodes) under one wind, so a memory policy can infer the wind from its first attempts and
correct for it in the later ones. Training trials have ``k_train`` attempts and val/test trials ``k_eval``, so an
evaluation can probe whether the agent keeps adapting past the number of attempts it was trained on.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.plugins.spec import ComponentSpec
from amago_envs.suites.attempts import split_attempts
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task


class WindConfig(EnvSuiteConfig):
    """Wind: reach a fixed goal under a hidden wind drawn per trial, over ``k`` attempts (meta-RL)."""

    kind: Literal["wind"] = "wind"
    """Registered name of this env suite."""

    n_tasks: int = Field(60, ge=1)
    """Winds in each task set (the train set and the held-out set each have this many)."""

    wind_max: float = Field(0.08, gt=0.0)
    """Each wind component is drawn uniformly from ``[-wind_max, wind_max]`` (actions are clipped to 0.1 per
    axis, so a wind near 0.1 leaves the agent almost no headway against it)."""

    wind_seed: int = Field(1337, ge=0)
    """Seed of the train task set, used by the train and val splits; drawn from a private generator, so the set
    depends on this seed alone."""

    held_out_seed: int = Field(9999, ge=0)
    """Seed of the held-out task set, used by the test split (``amago eval --tasks unseen``); must differ from
    ``wind_seed``."""

    goal_radius: float = Field(0.03, gt=0.0)
    """Distance to the goal ``(0, 1)`` within which a step pays the sparse reward and counts as a success."""

    dense_reward: bool = False
    """Pay ``exp(-distance to the goal)`` every step instead of the sparse reward; success is still reaching
    the goal disk."""

    max_episode_steps: int = Field(75, ge=1)
    """Steps of one attempt; the point is then put back at the origin under the same wind (a soft reset)."""

    k_train: int = Field(4, ge=1)
    """Attempts per trial in the train split (AMAGO's example trains with 4)."""

    k_eval: int = Field(10, ge=1)
    """Attempts per trial in the val and test splits (AMAGO's example evaluates with 10: more attempts than
    training, to see whether adaptation continues past the trained horizon)."""

    attempt_options: ClassVar[tuple[str, ...]] = ("k_train", "k_eval")
    """The options ``amago eval --attempts K`` sets to K (attempts per trial, in every split)."""
    attempt_metrics: ClassVar[dict[str, str]] = {"success": "Trial {i} Success", "return": "Trial {i} Return"}
    """Per-attempt metrics this suite logs, by name: info keys with ``{i}`` for the 0-based attempt (``{n}``:
    1-based), which ``amago eval --attempts`` reports attempt by attempt."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("wind", task, ())

    @model_validator(mode="after")
    def _disjoint_seeds(self) -> WindConfig:
        if self.held_out_seed == self.wind_seed:
            msg = (
                f"held_out_seed={self.held_out_seed} equals wind_seed, so the test winds would be the training "
                "winds; choose another held_out_seed."
            )
            raise ValueError(msg)
        return self

    def attempts(self, split: str) -> int:
        """Attempts per trial in ``split``: ``k_train`` for ``train``, ``k_eval`` for ``val`` and ``test``.

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        return split_attempts(split, self.k_train, self.k_eval)

    def episode_steps(self) -> int:
        """One training trial: ``k_train`` attempts of ``max_episode_steps`` (val/test trials are ``k_eval`` long).

        Training settings (files, exploration) are counted in training trials; the val horizon follows
        :meth:`eval_episode_steps`.
        """
        return self.k_train * self.max_episode_steps

    def eval_episode_steps(self) -> int:
        """One val or test trial: ``k_eval`` attempts of ``max_episode_steps`` (the val horizon follows it)."""
        return self.k_eval * self.max_episode_steps


_MEMORY = 128  # AMAGO's example: the policy remembers 128 steps, less than one 300-step training trial
_K_EVAL = 10  # WindConfig.k_eval's default; the val horizon below is one such trial
_ATTEMPT = 75  # WindConfig.max_episode_steps's default
WIND_PRESET: dict[str, object] = {
    # Rotary positions: the trial outgrows the 128-step memory, so the KV cache rolls over and absolute time
    # indices run past anything a fixed-length window saw in training.
    "traj_encoder": {"kind": "transformer", "pos_emb": "rope"},
    "agent": {"kind": "agent", "reward_multiplier": 10.0, "gamma": 0.99, "tau": 0.005},
    "exploration": {"kind": "egreedy", "steps_anneal": 500_000},
    "run": {"max_seq_len": _MEMORY},
    # Uniform window centres, never padded: a trial's first steps (where the wind is inferred) are sampled half
    # as often as its middle, where "none" samples them about 128 times less often.
    "replay": {"traj_save_len": 6 * _MEMORY, "padded_sampling": "center"},
    "schedule": {"val_timesteps_per_epoch": _K_EVAL * _ATTEMPT + 1},
    "optim": {"learning_rate": 3e-4, "grad_clip": 2.0},
}
"""AMAGO's Wind example: a 128-step memory (shorter than the 4 x 75 = 300-step training trial, so the
Transformer's cache rolls over), files of 6 x 128 steps sampled with centred windows, rotary positions, reward x10, gamma 0.99, tau 0.005,
epsilon-greedy annealed over 500k steps, lr 3e-4 and gradient clip 2; each val actor plays one whole
10-attempt trial (751 steps) per validation."""

WIND = ComponentSpec(
    name="wind",
    group=ENV_SUITES_GROUP,
    summary="Wind: reach a goal under a hidden per-trial wind over k attempts, held-out winds; numpy only.",
    config=WindConfig,
    factory="amago_envs.suites.wind.suite:WindSuite",
    presets={"*": WIND_PRESET},
)
