"""Spec and config of the ``popgym`` env suite (imports neither torch, gymnasium nor popgym at import time).

Env ids are ``popgym-<game>-<difficulty>`` in kebab case (``popgym-repeat-previous-easy`` is popgym's
``RepeatPreviousEasy``), plus ``popgym-multidomain``: AMAGO-2's 27-task MultiDomainPOPGym, one random task
per episode with a shared observation and action space.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import Field, field_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.presets import slot_with_alternative
from amago_core.config.sources import OPTIONS_BY_KIND_KEY
from amago_core.plugins.spec import ComponentSpec
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task

POPGYM_GAMES: dict[str, str] = {
    "autoencode": "Autoencode",
    "repeat-previous": "RepeatPrevious",
    "repeat-first": "RepeatFirst",
    "count-recall": "CountRecall",
    "position-only-cartpole": "PositionOnlyCartPole",
    "position-only-pendulum": "PositionOnlyPendulum",
    "velocity-only-cartpole": "VelocityOnlyCartPole",
    "noisy-position-only-cartpole": "NoisyPositionOnlyCartPole",
    "noisy-position-only-pendulum": "NoisyPositionOnlyPendulum",
    "multiarmed-bandit": "MultiarmedBandit",
    "higher-lower": "HigherLower",
    "battleship": "Battleship",
    "concentration": "Concentration",
    "minesweeper": "MineSweeper",
    "labyrinth-escape": "LabyrinthEscape",
    "labyrinth-explore": "LabyrinthExplore",
}
"""Task-name stem -> popgym class-name stem (the class adds ``Easy`` / ``Medium`` / ``Hard``). The labyrinth
games exist only where mazelib is installed (popgym leaves it optional)."""

POPGYM_DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")

MULTIDOMAIN_TASK = "multidomain"

POPGYM_CLASSES: dict[str, str] = {
    f"{stem}-{level}": f"{cls}{level.capitalize()}"
    for stem, cls in POPGYM_GAMES.items()
    for level in POPGYM_DIFFICULTIES
}
"""Task -> class name in ``popgym.envs`` for every single-game task."""

MULTIDOMAIN_TASKS: tuple[str, ...] = (
    *(
        f"{stem}-{level}"
        for stem in ("autoencode", "repeat-previous", "repeat-first")
        for level in POPGYM_DIFFICULTIES
    ),
    *(f"count-recall-{level}" for level in POPGYM_DIFFICULTIES),
    *(
        f"{stem}-{level}"
        for stem in ("position-only-cartpole", "velocity-only-cartpole", "noisy-position-only-cartpole")
        for level in POPGYM_DIFFICULTIES
    ),
    "multiarmed-bandit-easy",
    "multiarmed-bandit-medium",
    *(f"higher-lower-{level}" for level in POPGYM_DIFFICULTIES),
    "minesweeper-easy",
)
"""AMAGO-2's 27 MultiDomainPOPGym tasks: those whose one-hot observation and action fit a shared space."""

POPGYM_TASKS: tuple[str, ...] = (*POPGYM_CLASSES, MULTIDOMAIN_TASK)

POPGYM_DEFAULT_TASK = "repeat-previous-easy"


class POPGymConfig(EnvSuiteConfig):
    """POPGym (Morad et al., 2023) partially observable tasks, as AMAGO runs them."""

    kind: Literal["popgym"] = "popgym"
    """Registered name of this env suite."""

    truncated_is_done: bool = True
    """Report a time-limit truncation as termination too (old popgym semantics AMAGO trains with: the
    episode's end is part of the task, so its value is not bootstrapped past it)."""

    timer_scale: float = Field(1000.0, gt=0.0)
    """The step counter appended to every observation is divided by this."""

    warmup_episodes: int = Field(1, ge=0)
    """MultiDomainPOPGym only: unscored episodes of the drawn task before the scored one (their rewards are
    shown in the observation but paid as 0)."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("popgym", task, POPGYM_TASKS)

    def episode_steps(self) -> int | None:
        """The most steps one episode takes, read from popgym's own class (None where popgym is not installed).

        Sizing needs it: without it a short ``--steps`` run could only validate on the preset's 2,000-step
        horizon per actor (about 40 RepeatPreviousEasy episodes), once at the start and once at the end.
        Multi-domain: the longest task's episode, played ``warmup_episodes + 1`` times.
        """
        task = self.task or POPGYM_DEFAULT_TASK
        if task != MULTIDOMAIN_TASK:
            return popgym_episode_steps(POPGYM_CLASSES[task])
        longest = [popgym_episode_steps(POPGYM_CLASSES[name]) for name in MULTIDOMAIN_TASKS]
        if any(steps is None for steps in longest):
            return None
        return (self.warmup_episodes + 1) * max(steps for steps in longest if steps is not None)

    def best_known_return(self) -> float | None:
        """1.0 for every task: popgym scales every game's rewards so that an episode returns at most 1 (Morad et
        al., 2023; the card games pay ``±1 / (scored steps)`` a step, MineSweeper ``1 / (safe cells)`` a reveal).

        A perfect memory reaches it in the card games (Repeat*, Autoencode, CountRecall); where chance caps the
        expected return below 1 (HigherLower, MineSweeper, the bandit) a normalised score of 1 is out of reach.
        Multi-domain pays only the scored episode, so 1 caps it too.
        """
        return 1.0


@functools.cache
def popgym_episode_steps(class_name: str) -> int | None:
    """The longest episode of ``popgym.envs.<class_name>`` in steps, from the length popgym gives the game.

    popgym names it ``max_episode_length`` (most games) or ``episode_length`` (Concentration); an episode may
    take one step past it (a game that truncates after its last step), so one step is added. HigherLower has no
    such attribute: a deck of cards, one guess per card.

    Returns:
        None when popgym (or the class: the labyrinths need mazelib) is not installed.
    """
    try:
        import popgym.envs  # a few ms, numpy only: imported only when a run is being sized
    except ImportError:
        return None
    cls = getattr(popgym.envs, class_name, None)
    if cls is None:
        return None
    game = cls()
    length = getattr(game, "max_episode_length", None) or getattr(game, "episode_length", None)
    if length is None and hasattr(game, "deck"):
        length = game.deck.num_cards
    return int(length) + 1 if length is not None else None


# Example 03 (POPGym suite): settings the AMAGO paper reused unchanged across every POPGym task. A 2000-step
# context with learned positions, wide per-timestep MLP, long-horizon gammas, rewards x100 (x200 for the
# multi-domain mix), a slow target network, a permissive advantage filter and near-greedy discrete policies.
_POPGYM_HORIZON = 2000
POPGYM_PRESETS: dict[str, Any] = {
    "*": {
        "run": {"max_seq_len": _POPGYM_HORIZON},
        "replay": {"traj_save_len": _POPGYM_HORIZON},
        "schedule": {"val_timesteps_per_epoch": _POPGYM_HORIZON},
        "optim": {"learning_rate": 1e-4, "grad_clip": 1.0, "lr_warmup_steps": 2000},
        "tstep_encoder": {"kind": "ff", "n_layers": 2, "d_hidden": 512, "d_output": 200},
        "traj_encoder": {"kind": "transformer", "pos_emb": "learnable", "max_time_idx": _POPGYM_HORIZON},
        "agent": slot_with_alternative(
            "agent",
            {
                "reward_multiplier": 100.0,
                "tau": 0.0025,
                "multigammas": [
                    0.1,
                    0.7,
                    0.9,
                    0.93,
                    0.95,
                    0.98,
                    0.99,
                    0.992,
                    0.994,
                    0.995,
                    0.997,
                    0.998,
                    0.999,
                    0.9991,
                    0.9992,
                    0.9993,
                    0.9994,
                    0.9995,
                ],
                "fbc_filter": {"type": "binary", "threshold": 1e-3},
                "discrete_dist": {"type": "discrete", "clip_prob_low": 1e-6, "clip_prob_high": 1.0},
            },
            alternative="multitask",
            alternative_options={"output_bins": 64},  # example 03's two-hot critic
        ),
        "exploration": {"kind": "egreedy", "steps_anneal": 1_000_000},
    },
    MULTIDOMAIN_TASK: {
        "agent": {
            "reward_multiplier": 200.0,
            OPTIONS_BY_KIND_KEY: {"multitask": {"reward_multiplier": 200.0}},
        }
    },
}

POPGYM = ComponentSpec(
    name="popgym",
    group=ENV_SUITES_GROUP,
    summary="POPGym memory tasks (popgym-repeat-previous-easy...) and AMAGO-2's popgym-multidomain.",
    config=POPGymConfig,
    factory="amago_envs.suites.popgym.suite:POPGymSuite",
    requires=("popgym",),
    install_hint='pip install "amago-envs[popgym]"',
    tasks=list(POPGYM_TASKS),
    default_task=POPGYM_DEFAULT_TASK,
    presets=POPGYM_PRESETS,
)
