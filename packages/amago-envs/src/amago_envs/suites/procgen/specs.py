"""Spec and config of the ``procgen`` env suite (torch-, gymnasium- and procgen-free).

procgen publishes no wheel for Python 3.11; ``procgen-mirror`` 0.10.7 does, but it needs numpy<2 and the
old ``gym`` 0.26 + ``gym3`` stack, so the ``procgen`` extra conflicts with the jax suites and installs into
its own environment (``pip install "amago-envs[procgen]"`` resolves to that stack on 3.11).

Tasks follow AMAGO's ``--distribution`` flag: ``easy`` and ``easy-rescaled`` (five platform games, the latter
with coinrun x100 and climber x0.1 rewards) and ``memory-hard`` (all 16 games, in procgen's "memory" mode where
a game has one and "hard" otherwise, as AMAGO's example 09).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Literal

from pydantic import Field, field_validator, model_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.plugins.spec import ComponentSpec, OwnEnvironment
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task

ALL_PROCGEN_GAMES: tuple[str, ...] = (
    "bigfish",
    "bossfight",
    "caveflyer",
    "chaser",
    "climber",
    "coinrun",
    "dodgeball",
    "fruitbot",
    "heist",
    "jumper",
    "leaper",
    "maze",
    "miner",
    "ninja",
    "plunder",
    "starpilot",
)
MEMORY_GAMES: tuple[str, ...] = ("dodgeball", "caveflyer", "heist", "jumper", "maze", "miner")
"""Games with procgen's "memory" distribution mode (used by the memory-hard task; others fall back to hard)."""

EASY_GAMES: tuple[str, ...] = ("climber", "coinrun", "jumper", "ninja", "leaper")

PROCGEN_TASKS: tuple[str, ...] = ("easy", "easy-rescaled", "memory-hard")
TASK_GAMES: dict[str, tuple[str, ...]] = {
    "easy": EASY_GAMES,
    "easy-rescaled": EASY_GAMES,
    "memory-hard": ALL_PROCGEN_GAMES,
}
TASK_REWARD_SCALES: dict[str, dict[str, float]] = {"easy-rescaled": {"coinrun": 100.0, "climber": 0.1}}
TASK_HORIZONS: dict[str, int] = {"easy": 2000, "easy-rescaled": 2000, "memory-hard": 5000}
"""Step limit of the whole two-attempt episode per task (example 09)."""

MAX_SEQ_LEN = 256


class ProcgenConfig(EnvSuiteConfig):
    """Two attempts at one random level of one random game per episode."""

    kind: Literal["procgen"] = "procgen"
    """Registered name of this env suite."""

    games: list[str] | None = None
    """Games to draw from; None uses the task's games."""

    reward_scales: dict[str, float] | None = None
    """Per-game reward multipliers; None uses the task's (only easy-rescaled has any)."""

    train_seeds: int = Field(10_000, ge=1)
    """Train levels are ``[0, train_seeds]``; val and test levels ``[train_seeds + 1, 10_000_000]``."""

    horizon: int | None = Field(None, ge=1)
    """Step limit of a two-attempt episode; None uses the task's (2000, or 5000 for memory-hard)."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("procgen", task, PROCGEN_TASKS)

    def episode_steps(self) -> int:
        """``horizon``, or the task's (the preset's val pass is five of them; its context is a window)."""
        return self.horizon or TASK_HORIZONS[self.task or "easy"]

    @model_validator(mode="after")
    def _known_games(self) -> ProcgenConfig:
        unknown = sorted((set(self.games or ()) | set(self.reward_scales or ())) - set(ALL_PROCGEN_GAMES))
        if unknown:
            msg = f"unknown procgen game(s) {unknown}; games: {', '.join(ALL_PROCGEN_GAMES)}."
            raise ValueError(msg)
        if self.games is not None and not self.games:
            msg = "games is empty; name at least one game or leave it unset for the task's games."
            raise ValueError(msg)
        return self


def _preset(task: str) -> dict:
    horizon = TASK_HORIZONS[task]
    return {
        "run": {"max_seq_len": MAX_SEQ_LEN},
        "replay": {"traj_save_len": 4 * MAX_SEQ_LEN},
        "schedule": {"val_timesteps_per_epoch": 5 * horizon + 1},
        "tstep_encoder": {"kind": "cnn", "cnn_type": "impala", "channels_first": False, "drqv2_aug": True},
    }


PROCGEN_ENVIRONMENT = (
    "in the amago workspace `UV_PROJECT_ENVIRONMENT=.venv-procgen uv sync --locked --no-dev --group test "
    "--extra procgen` (then `.venv-procgen/bin/amago run --env procgen`), elsewhere "
    '`pip install "amago-envs[procgen]"` in a fresh venv'
)
"""How to build procgen's own environment (the same command CI uses)."""


def installed_numpy_version() -> str | None:
    """numpy's version from its metadata (numpy is not imported), or None when it is not installed."""
    try:
        return version("numpy")
    except PackageNotFoundError:
        return None


def numpy_2_here() -> str | None:
    """What rules procgen out of this environment: ``numpy 2.x`` when numpy 2 or later is installed, else None.

    procgen-mirror needs numpy<2; installing the procgen extra next to numpy 2 would downgrade numpy under every
    other suite, so `amago doctor` points at procgen's own environment instead of the install line.
    """
    numpy_version = installed_numpy_version()
    major = (numpy_version or "").split(".")[0]
    return f"numpy {numpy_version}" if major.isdigit() and int(major) >= 2 else None


PROCGEN = ComponentSpec(
    name="procgen",
    group=ENV_SUITES_GROUP,
    summary="Multi-game two-attempt Procgen (AMAGO-2); procgen-mirror needs numpy<2 and gym 0.26.",
    config=ProcgenConfig,
    factory="amago_envs.suites.procgen.suite:ProcgenSuite",
    requires=("procgen", "gym3"),
    install_hint='pip install "amago-envs[procgen]"',
    own_environment=OwnEnvironment(
        needs="numpy<2", how=PROCGEN_ENVIRONMENT, clash="amago_envs.suites.procgen.specs:numpy_2_here"
    ),
    tasks=list(PROCGEN_TASKS),
    default_task="easy",
    # Example 09: IMPALA CNN (channels last) with DrQ augmentation, max_seq_len 256, traj_save_len 4·max_seq_len, val 5·horizon+1.
    presets={task: _preset(task) for task in PROCGEN_TASKS},
)
