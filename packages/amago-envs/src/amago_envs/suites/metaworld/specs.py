"""Spec and config of the ``metaworld`` env suite (torch-, gymnasium- and metaworld-free: listing loads it).

Env ids: ``metaworld-ml1-<env>`` / ``metaworld-mt1-<env>`` for one Meta-World environment (``reach-v3``...),
``metaworld-ml10``, ``-ml25``, ``-ml45`` for the meta-learning benchmarks (held-out test environments) and
``metaworld-mt10``, ``-mt25``, ``-mt50`` for the multi-task ones (no test environments: test uses train tasks).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.presets import slot_with_alternative
from amago_core.plugins.spec import ComponentSpec
from amago_envs.suites.attempts import split_attempts
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task

METAWORLD_ENVS: tuple[str, ...] = (
    "assembly-v3", "basketball-v3", "bin-picking-v3", "box-close-v3", "button-press-topdown-v3",
    "button-press-topdown-wall-v3", "button-press-v3", "button-press-wall-v3", "coffee-button-v3",
    "coffee-pull-v3", "coffee-push-v3", "dial-turn-v3", "disassemble-v3", "door-close-v3", "door-lock-v3",
    "door-open-v3", "door-unlock-v3", "hand-insert-v3", "drawer-close-v3", "drawer-open-v3", "faucet-open-v3",
    "faucet-close-v3", "hammer-v3", "handle-press-side-v3", "handle-press-v3", "handle-pull-side-v3",
    "handle-pull-v3", "lever-pull-v3", "pick-place-wall-v3", "pick-out-of-hole-v3", "pick-place-v3",
    "plate-slide-v3", "plate-slide-side-v3", "plate-slide-back-v3", "plate-slide-back-side-v3",
    "peg-insert-side-v3", "peg-unplug-side-v3", "soccer-v3", "stick-push-v3", "stick-pull-v3", "push-v3",
    "push-wall-v3", "push-back-v3", "reach-v3", "reach-wall-v3", "shelf-place-v3", "sweep-into-v3", "sweep-v3",
    "window-open-v3", "window-close-v3",
)  # fmt: skip
"""Meta-World 3.x environment names (``metaworld.env_dict.ALL_V3_ENVIRONMENTS``), written out so that listing
the suite's tasks needs no metaworld import; a test checks them against the installed library."""

MULTI_ENV_BENCHMARKS: tuple[str, ...] = ("ml10", "ml25", "ml45", "mt10", "mt25", "mt50")
"""Benchmarks over many environments (a random environment, then a random goal, per meta-episode)."""

METAWORLD_TASKS: tuple[str, ...] = (
    MULTI_ENV_BENCHMARKS
    + tuple(f"ml1-{e}" for e in METAWORLD_ENVS)
    + tuple(f"mt1-{e}" for e in METAWORLD_ENVS)
)


class MetaworldConfig(EnvSuiteConfig):
    """Meta-World as k-shot meta-RL: ``k_episodes`` trials on one task per meta-episode (AMAGO's example 07)."""

    kind: Literal["metaworld"] = "metaworld"
    """Registered name of this env suite."""

    k_episodes: int = Field(3, ge=1)
    """Trials (soft resets) on the same task before the meta-episode ends, in every split unless ``k_train`` /
    ``k_eval`` say otherwise."""

    k_train: int | None = Field(None, ge=1)
    """Trials per meta-episode in the train split; None: ``k_episodes``."""

    k_eval: int | None = Field(None, ge=1)
    """Trials per meta-episode in the val and test splits; None: as many as in training. More than in training
    probes whether the agent keeps adapting past the trials it was trained on."""

    max_episode_steps: int = Field(500, ge=1, le=500)
    """Steps of one trial; Meta-World's own limit is 500."""

    benchmark_seed: int | None = 0
    """Seed of Meta-World's goal sampling. Fixed by default so that every actor process (and the val and test
    envs) shares one set of train and test goals; None draws new goals in each process."""

    reward_scales: dict[str, float] | None = None
    """Reward multipliers per Meta-World environment (``{"reach-v3": 0.5}``), for benchmarks whose tasks pay on
    very different scales (AMAGO's example 07 keeps them as a class-level table); environments not named keep
    their rewards. None: no scaling. Logged returns are the scaled ones."""

    attempt_options: ClassVar[tuple[str, ...]] = ("k_episodes", "k_train", "k_eval")
    """The options ``amago eval --attempts K`` sets to K (attempts per trial, in every split)."""
    attempt_metrics: ClassVar[dict[str, str]] = {"success": "Trial {i} Success"}
    """Per-attempt metrics this suite logs, by name: info keys with ``{i}`` for the 0-based attempt (``{n}``:
    1-based), which ``amago eval --attempts`` reports attempt by attempt."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("metaworld", task, METAWORLD_TASKS)

    @field_validator("reward_scales")
    @classmethod
    def _known_environments(cls, scales: dict[str, float] | None) -> dict[str, float] | None:
        unknown = sorted(set(scales or ()) - set(METAWORLD_ENVS))
        if unknown:
            msg = f"reward_scales names unknown Meta-World environment(s) {unknown}; names look like 'reach-v3'."
            raise ValueError(msg)
        if any(scale <= 0 for scale in (scales or {}).values()):
            msg = f"reward_scales must be positive multipliers; got {scales}."
            raise ValueError(msg)
        return scales

    def attempts(self, split: str) -> int:
        """Trials per meta-episode in ``split``: ``k_train`` (else ``k_episodes``) for ``train``; ``k_eval`` (else
        the train count) for ``val`` and ``test``.

        Raises:
            ValueError: ``split`` is not train, val or test.
        """
        train = self.k_train if self.k_train is not None else self.k_episodes
        return split_attempts(split, train, train if self.k_eval is None else self.k_eval)

    def episode_steps(self) -> int:
        """One training meta-episode: its trials of ``max_episode_steps`` (the preset's context, 256, is a window
        of it)."""
        return self.attempts("train") * self.max_episode_steps

    def eval_episode_steps(self) -> int:
        """One val or test meta-episode: its ``k_eval`` trials (the val horizon follows it)."""
        return self.attempts("val") * self.max_episode_steps


_K = 3  # example 07's default --k; the preset's lengths below are derived from it
METAWORLD_PRESET: dict[str, object] = {
    "tstep_encoder": {"kind": "ff"},
    "agent": slot_with_alternative(
        "agent",
        {"reward_multiplier": 1.0, "num_critics": 4},
        alternative="multitask",
        alternative_options={"min_return": -100.0, "max_return": 5000.0 * _K, "output_bins": 96},
    ),
    "exploration": {"kind": "bilevel", "steps_anneal": 2_000_000, "rollout_horizon": 500 * _K},
    "run": {"max_seq_len": 256},
    "replay": {"traj_save_len": min(500 * _K + 1, 4 * 256)},
    "schedule": {"val_timesteps_per_epoch": 15 * _K * 500 + 1},
    "optim": {"learning_rate": 5e-4, "grad_clip": 2.0},
}
"""Example 07's hyperparameters for ``k_episodes=3``. Another k or trial length moves the exploration horizon
and the val horizon with the meta-episode; the 256-step context and the 1024-step files stay. With
``--agent multitask`` its two-hot critic covers returns -100 to 5000·k in 96 bins, as in the example."""

METAWORLD = ComponentSpec(
    name="metaworld",
    group=ENV_SUITES_GROUP,
    summary="Meta-World ML1/ML10/ML45 (+ MT) as k-shot meta-RL with per-task success metrics.",
    config=MetaworldConfig,
    factory="amago_envs.suites.metaworld.suite:MetaworldSuite",
    requires=("metaworld", "mujoco"),
    install_hint='pip install "amago-envs[metaworld]"',
    tasks=list(METAWORLD_TASKS),
    default_task="ml1-reach-v3",
    presets={"*": METAWORLD_PRESET},
)
