"""Spec and config of the ``xland`` env suite (torch-, gymnasium- and jax-free: ``amago list envs`` loads it).

Tasks are ruleset sources. ``local-trivial`` … ``local-high`` are generated here, offline, from a seed (a goal
plus a chain of 0-3 "put these two objects next to each other" rules, with distractor objects).
``trivial-21k``, ``small-1m``, ``medium-1m``, ``medium-3m``, ``high-1m`` and ``high-3m`` are xminigrid's
published benchmarks, which xminigrid downloads at run time; the suite never downloads: it loads the file if
it is already on disk and otherwise fails with one line that says how to pre-fetch it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.presets import slot_with_alternative
from amago_core.plugins.spec import ComponentSpec
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task

LOCAL_LEVELS: dict[str, tuple[int, int]] = {
    "local-trivial": (0, 1),
    "local-small": (1, 2),
    "local-medium": (2, 2),
    "local-high": (3, 3),
}
"""Generated tasks: (rules in the chain that makes the goal object, distractor objects)."""

BENCHMARKS: tuple[str, ...] = ("trivial-21k", "small-1m", "medium-1m", "medium-3m", "high-1m", "high-3m")
"""xminigrid's downloadable benchmarks (``xminigrid.registered_benchmarks()``)."""

XLAND_TASKS: tuple[str, ...] = (*LOCAL_LEVELS, *BENCHMARKS)
XLAND_DEFAULT_TASK = "local-small"

XLAND_NUM_ENVS = 16
"""Default batch size; also the preset's ``rollout.parallel_actors`` (the two must match)."""

K_EPISODES = 15
"""Example 11's ``--k_shots``: episodes on one ruleset before the row gets a new one."""

GRID_SIZE = 9
ROOMS: Literal[1, 2, 4, 6, 9] = 1
DEFAULT_MAX_STEPS = 3 * GRID_SIZE * GRID_SIZE
"""xminigrid's default episode limit (3·height·width) for the default grid."""

META_LEN = K_EPISODES * DEFAULT_MAX_STEPS + 1
"""Longest trajectory file with the defaults: k episodes of at most max_steps each, plus the first obs."""


class XLandConfig(EnvSuiteConfig):
    """XLand-MiniGrid meta-RL: a batch of rows, each playing ``k_episodes`` episodes per ruleset."""

    kind: Literal["xland"] = "xland"
    """Registered name of this env suite."""

    num_envs: int = Field(XLAND_NUM_ENVS, ge=1)
    """Rows stepped at once; must equal ``rollout.parallel_actors`` (already_vectorized mode)."""

    k_episodes: int = Field(K_EPISODES, ge=1)
    """Episodes played on one ruleset (with a fresh layout each) before the row draws a new ruleset."""

    rooms: Literal[1, 2, 4, 6, 9] = ROOMS
    """Rooms in the grid (xminigrid's R1, R2, R4, R6, R9 layouts)."""

    grid_size: int = Field(GRID_SIZE, ge=5)
    """Side of the square grid (xminigrid registers 9, 13, 16, 19, 25 and more per layout)."""

    view_size: int = Field(5, ge=3)
    """Side of the agent's egocentric view (odd)."""

    max_steps: int | None = Field(None, ge=1)
    """Steps per episode; None uses xminigrid's 3·grid_size²."""

    num_rulesets: int = Field(4096, ge=2)
    """Rulesets generated for ``local-*`` tasks (train and test share none of them)."""

    train_fraction: float = Field(0.8, gt=0.0, lt=1.0)
    """Share of the rulesets used by the train split; val and test draw from the rest."""

    ruleset_seed: int = 0
    """Seed of ruleset generation and of the train/test split (the same seed gives the same split)."""

    seed: int | None = None
    """Seed of the batch's jax key; None draws one per environment instance."""

    attempt_options: ClassVar[tuple[str, ...]] = ("k_episodes",)
    """The options ``amago eval --attempts K`` sets to K (attempts per trial, in every split)."""
    attempt_metrics: ClassVar[dict[str, str]] = {"return": "Ep {n} Return"}
    """Per-attempt metrics this suite logs, by name: info keys with ``{i}`` for the 0-based attempt (``{n}``:
    1-based), which ``amago eval --attempts`` reports attempt by attempt."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("xland", task, XLAND_TASKS)

    def smoke_options(self) -> dict[str, Any]:
        """``--smoke`` runs 2 actors, and an already-vectorized env has one row per actor: 2 rows."""
        return {"num_envs": 2}

    def episode_steps(self) -> int:
        """``k_episodes`` episodes of ``max_steps`` (xminigrid's 3·grid_size² when unset) on one ruleset."""
        return self.k_episodes * (self.max_steps or 3 * self.grid_size**2)

    @field_validator("view_size")
    @classmethod
    def _odd_view(cls, view_size: int) -> int:
        if view_size % 2 == 0:
            msg = f"view_size must be odd (the agent sits in the middle column), got {view_size}; use {view_size + 1}."
            raise ValueError(msg)
        return view_size


XLAND = ComponentSpec(
    name="xland",
    group=ENV_SUITES_GROUP,
    summary="XLand-MiniGrid: k episodes per ruleset, already vectorised in jax; rulesets generated offline.",
    config=XLandConfig,
    factory="amago_envs.suites.xland.suite:XLandSuite",
    requires=("xminigrid", "jax"),
    install_hint='pip install "amago-envs[xland]"',
    tasks=list(XLAND_TASKS),
    default_task=XLAND_DEFAULT_TASK,
    presets={
        # Example 11: already_vectorized, trajectory files hold a whole k-episode rollout (no stagger),
        # max_seq_len = min(2048, rollout), val = one rollout, learning starts once a rollout is stored,
        # reward_multiplier 10, grad_clip 2, egreedy annealed over 1M steps. The timestep encoder is
        # example 11's, registered as ``xland`` in amago-nets: a gridworld CNN (32, 48, 64 channels) over the
        # embedded tile and colour ids of ``grid``, an embedding of ``goal``, an MLP over ``direction_done``.
        "*": {
            "env": {"num_envs": XLAND_NUM_ENVS, "k_episodes": K_EPISODES},
            "rollout": {"env_mode": "already_vectorized", "parallel_actors": XLAND_NUM_ENVS},
            "run": {"max_seq_len": min(2048, META_LEN)},
            "replay": {"traj_save_len": META_LEN, "stagger_traj_file_lengths": False},
            "schedule": {
                "val_timesteps_per_epoch": META_LEN,
                "start_learning_at_epoch": META_LEN // 1000,
            },
            "optim": {"grad_clip": 2.0},
            "tstep_encoder": {"kind": "xland", "d_output": 128},  # example 11's timestep embedding width
            "agent": slot_with_alternative(
                "agent",
                {"reward_multiplier": 10.0},
                alternative="multitask",
                # example 11's two-hot critic: returns within +-100 per episode, 32 bins
                alternative_options={
                    "min_return": -100.0 * K_EPISODES,
                    "max_return": 100.0 * K_EPISODES,
                    "output_bins": 32,
                },
            ),
            "exploration": {"kind": "egreedy", "steps_anneal": 1_000_000},
        },
    },
)
