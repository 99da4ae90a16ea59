"""Specs and configs of the built-in env suites (torch-free and gymnasium-free: ``amago list envs`` loads it).

Each suite's options carry AMAGO's defaults. The env id a user types is the suite name with ``_`` written
as ``-`` followed by an optional task (``tmaze-active``); the registry fills ``task`` and the config checks
it here, so an unknown task fails before any environment code is imported.
"""

from __future__ import annotations

import math
from difflib import SequenceMatcher
from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.plugins.spec import ComponentSpec
from amago_core.suggest import did_you_mean

ENV_SUITES_GROUP = "amago.env_suites"

TMAZE_TASKS: tuple[str, ...] = ("passive", "active")
"""T-Maze variants: the goal side is shown at the start (passive) or one step back from it (active)."""

TASKS_IN_AN_ERROR = 5
"""An unknown task's message names at most this many env ids, closest first (ALE alone has over 100)."""


def _closest_first(word: str, tasks: tuple[str, ...]) -> list[str]:
    """``tasks`` by similarity to ``word`` (case ignored), most similar first; ties keep the suite's order."""
    typed = word.lower()
    return sorted(tasks, key=lambda task: -SequenceMatcher(None, typed, task.lower()).ratio())


def check_task(suite: str, task: str | None, tasks: tuple[str, ...]) -> str | None:
    """Returns ``task`` if the suite has it (None always passes: it picks the default).

    Args:
        suite: the suite's registered name (``tmaze``), used in the message.
        task: what the env id named after the suite.
        tasks: the suite's tasks; empty for suites whose env id is the suite name alone.

    Raises:
        ValueError: the task is unknown; one line with the closest env ids (at most
            :data:`TASKS_IN_AN_ERROR`), how many tasks there are and the command that lists them all.
    """
    if task is None or task in tasks:
        return task
    env_prefix = suite.replace("_", "-")
    if not tasks:
        msg = f"env suite {suite!r} has no tasks, got {task!r}; use the env id {env_prefix!r}."
        raise ValueError(msg)
    closest = [f"{env_prefix}-{t}" for t in _closest_first(task, tasks)[:TASKS_IN_AN_ERROR]]
    known = f"Its env ids: {', '.join(closest)}."
    if len(tasks) > len(closest):
        known = (
            f"Closest env ids: {', '.join(closest)} ({len(tasks)} tasks in all; `amago list envs {suite}` "
            "lists them all)."
        )
    msg = f"env suite {suite!r} has no task {task!r}.{did_you_mean(task, tasks)} {known}"
    raise ValueError(msg)


class TMazeConfig(EnvSuiteConfig):
    """T-Maze (Ni et al., 2023): remember the goal side seen at the start across a long corridor."""

    kind: Literal["tmaze"] = "tmaze"
    """Registered name of this env suite."""

    corridor_length: int = Field(10, ge=1)
    """Corridor cells between the start and the junction; the memory span the task tests."""

    goal_reward: float = 1.0
    """Reward for ending the episode on the goal side shown at the start."""

    penalty: float | None = Field(None, le=0.0)
    """The "Alt" penalty for every action other than "right" after the oracle; None uses
    ``-1 / corridor_length`` (AMAGO's T-Maze example), 0 turns it off."""

    whole_episode_memory: ClassVar[bool] = True

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("tmaze", task, TMAZE_TASKS)

    def episode_steps(self) -> int:
        """The corridor, the turn, and (active) the detour to the oracle and back."""
        return self.corridor_length + (3 if self.task == "active" else 1)


class FrozenLakeConfig(EnvSuiteConfig):
    """Meta-Frozen-Lake: k attempts on one random lake, learning from the holes fallen into."""

    kind: Literal["frozen_lake"] = "frozen_lake"
    """Registered name of this env suite."""

    size: int = Field(5, ge=2)
    """Side of the square lake (AMAGO's example uses 5)."""

    k_episodes: int = Field(10, ge=1)
    """Attempts on each lake before a new one is drawn."""

    hard_mode: bool = False
    """Per lake: a 50% chance that two movement actions swap; per step: 25% noisy position readings and a
    33% chance that the ice breaks behind the agent. Adds partial observability and memory demands."""

    recover_mode: bool = False
    """Falling into a hole costs -0.1 and keeps the agent in place instead of ending the attempt."""

    max_episode_steps: int | None = Field(None, ge=1)
    """Step limit of one attempt; None gives size² (2·size² in hard mode), divided by 1 - slip_chance."""

    show_k_progress: bool = True
    """Put the attempt counter (attempt / k_episodes) in the observation."""

    slip_chance: float = Field(0.0, ge=0.0, lt=1.0)
    """Chance that a step goes in a random direction instead of the chosen one."""

    train_tasks: int | None = Field(None, ge=1, le=100_000)
    """Size of a finite pool of training lakes: train and val envs draw each lake from lake seeds
    0..train_tasks-1, test envs (and `amago eval --tasks unseen`) from lakes outside the pool. None: every
    reset draws a fresh random lake for every split (nothing held out). At most 100,000: held-out envs list
    the pool's lakes once per process (about 1 s per 10,000)."""

    whole_episode_memory: ClassVar[bool] = True
    attempt_options: ClassVar[tuple[str, ...]] = ("k_episodes",)
    """The options ``amago eval --attempts K`` sets to K (attempts per trial, in every split)."""
    attempt_metrics: ClassVar[dict[str, str]] = {"success": "Episode {i} Success"}
    """Per-attempt metrics this suite logs, by name: info keys with ``{i}`` for the 0-based attempt (``{n}``:
    1-based), which ``amago eval --attempts`` reports attempt by attempt."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("frozen_lake", task, ())

    def episode_steps(self) -> int:
        """``k_episodes`` attempts of at most ``max_episode_steps`` steps (its default rule when unset)."""
        attempt = self.max_episode_steps or math.ceil(
            self.size**2 * (2 if self.hard_mode else 1) / (1.0 - self.slip_chance)
        )
        return self.k_episodes * attempt


Location = Literal["random"] | tuple[int, int]


class KeyDoorConfig(EnvSuiteConfig):
    """Dark Key-To-Door (after Algorithm Distillation): key, then door, as often as the horizon allows."""

    kind: Literal["key_door"] = "key_door"
    """Registered name of this env suite."""

    dark: bool = True
    """Hide the key and door positions; False shows them, which removes the need for memory."""

    size: int = Field(9, ge=2)
    """Side of the square room."""

    max_episode_steps: int = Field(50, ge=1)
    """Steps of one attempt before the agent is sent back to the start of the same room."""

    meta_rollout_horizon: int = Field(500, ge=1)
    """Steps spent in one room (across attempts) before a new room is drawn."""

    start_location: Location = "random"
    """Start cell ``(x, y)``, or "random" for a new one per room."""

    key_location: Location = "random"
    """Key cell ``(x, y)``, or "random" for a new one per room."""

    goal_location: Location = "random"
    """Door cell ``(x, y)``, or "random" for a new one per room."""

    randomize_actions: bool = False
    """Shuffle which action index moves in which direction, per room."""

    whole_episode_memory: ClassVar[bool] = True

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("key_door", task, ())

    def episode_steps(self) -> int:
        """One room: ``meta_rollout_horizon`` steps across attempts."""
        return self.meta_rollout_horizon

    @model_validator(mode="after")
    def _locations_inside_room(self) -> KeyDoorConfig:
        for name in ("start_location", "key_location", "goal_location"):
            location = getattr(self, name)
            if location != "random" and not all(0 <= c < self.size for c in location):
                msg = (
                    f"{name}={location} is outside the {self.size}x{self.size} room; use 0..{self.size - 1}."
                )
                raise ValueError(msg)
        return self


class MaskedBanditConfig(EnvSuiteConfig):
    """Masked bandit: arm 0 pays 1 but is illegal on odd steps, arm 1 pays 0.5, arm 2 pays 0 (the action-mask
    demo: with the mask the best play is readable at every step)."""

    kind: Literal["masked_bandit"] = "masked_bandit"
    """Registered name of this env suite."""

    horizon: int = Field(8, ge=2)
    """Steps per episode; the best return is 0.75 x horizon (rounded down for odd horizons)."""

    mask_from: Literal["info", "obs", "withheld"] = "info"
    """Where the env gives its action mask: `info["legal"]`, a `legal` observation key, or `withheld` (the
    unmasked baseline, where an illegal pull pays -1)."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("masked_bandit", task, ())

    def episode_steps(self) -> int:
        """One episode: ``horizon`` steps."""
        return self.horizon


class MazeRunnerConfig(EnvSuiteConfig):
    """MazeRunner: reach a sequence of goal cells in order in a random maze."""

    kind: Literal["mazerunner"] = "mazerunner"
    """Registered name of this env suite."""

    maze_dim: int = Field(11, ge=7)
    """Side of the maze; even values are rounded up to the next odd one."""

    num_goals: int = Field(3, ge=1)
    """Goals per episode (the most, when ``min_num_goals`` is set)."""

    min_num_goals: int | None = Field(None, ge=1)
    """Fewest goals per episode; None gives every episode ``num_goals``."""

    time_limit: int = Field(250, ge=1)
    """Steps per episode."""

    randomized_action_space: bool = False
    """Permute the action indices per episode ("rewired" actions in the AMAGO paper)."""

    relabel_info: bool = True
    """Dict observations ``obs``, ``achieved`` (current cell) and ``goals`` (remaining goals, done ones -1),
    the layout hindsight relabeling rewrites; False gives a flat vector."""

    goal_in_obs: bool | None = None
    """Append the goal cells to the flat vector; None does so only without ``relabel_info`` (with it the goals
    live in the ``goals`` key, which relabeling rewrites)."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("mazerunner", task, ())

    def episode_steps(self) -> int:
        """``time_limit`` steps."""
        return self.time_limit

    @model_validator(mode="after")
    def _consistent_goals(self) -> MazeRunnerConfig:
        if self.min_num_goals is not None and self.min_num_goals > self.num_goals:
            msg = f"min_num_goals={self.min_num_goals} exceeds num_goals={self.num_goals}; lower one of them."
            raise ValueError(msg)
        if self.relabel_info and self.goal_in_obs:
            msg = (
                "goal_in_obs=True with relabel_info=True would put the goals in `obs` where relabeling "
                "cannot rewrite them; leave goal_in_obs unset (the goals are in the `goals` key)."
            )
            raise ValueError(msg)
        return self


COMBINATION_LOCK_MAX_FLAT_ACTIONS = 4096
"""Most actions the flattened (``action_format="discrete"``) combination lock may have: its policy head has one
output per combination, so ``symbols ** dials`` grows out of reach fast (4 symbols on 6 dials is 4096)."""


class CombinationLockConfig(EnvSuiteConfig):
    """Combination lock: remember a code shown only at the first step and set every dial at once (the
    MultiDiscrete-action demo, with a flattened Discrete baseline)."""

    kind: Literal["combination_lock"] = "combination_lock"
    """Registered name of this env suite."""

    dials: int = Field(3, ge=2)
    """Dials on the lock: the code has one symbol per dial, and each action sets them all."""

    symbols: int = Field(4, ge=2)
    """Positions of each dial."""

    horizon: int = Field(10, ge=1)
    """Attempts before the episode is truncated (it ends earlier, terminated, when the lock opens)."""

    reward: Literal["per_dial", "sparse"] = "per_dial"
    """`per_dial`: each closed attempt pays the fraction of dials it set right; `sparse`: closed attempts pay 0.
    Either way the open lock pays 1 for its own step and 1 for each step left in the horizon, so opening sooner
    always beats collecting partial credit."""

    action_format: Literal["multidiscrete", "discrete"] = "multidiscrete"
    """`multidiscrete`: ``MultiDiscrete([symbols] * dials)``, one choice per dial; `discrete`: the flattened
    baseline ``Discrete(symbols ** dials)`` (index -> dials in row-major order: dial 0 is the most significant
    digit in base ``symbols``), for at most 4096 combinations."""

    whole_episode_memory: ClassVar[bool] = True

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("combination_lock", task, ())

    def episode_steps(self) -> int:
        """One episode: at most ``horizon`` attempts."""
        return self.horizon

    @model_validator(mode="after")
    def _flat_actions_fit(self) -> CombinationLockConfig:
        combinations = self.symbols**self.dials
        if self.action_format == "discrete" and combinations > COMBINATION_LOCK_MAX_FLAT_ACTIONS:
            msg = (
                f"action_format='discrete' with {self.dials} dials of {self.symbols} symbols has {combinations} "
                f"actions, over the {COMBINATION_LOCK_MAX_FLAT_ACTIONS} a flat policy head can take; use "
                "action_format='multidiscrete' or fewer dials or symbols."
            )
            raise ValueError(msg)
        return self


# ----- presets: the hyperparameters of AMAGO's examples for these suites (reference §6.3) -----

_TMAZE_CORRIDOR = 10  # TMazeConfig.corridor_length's default; the lengths below follow from it
_TMAZE_EPISODE = {"passive": _TMAZE_CORRIDOR + 1, "active": _TMAZE_CORRIDOR + 3}
TMAZE_PRESETS: dict[str, dict[str, object]] = {
    "*": {
        "tstep_encoder": {
            "kind": "ff",
            "n_layers": 2,
            "d_hidden": 128,
            "d_output": 128,
            "normalize_inputs": False,
        },
        "agent": {"kind": "agent", "reward_multiplier": 100.0, "gamma": 0.9999},
        # Example 04's exploration: epsilon 1.0 -> 0.01 over 100k steps, but 0.5 / H inside the corridor.
        "exploration": {"kind": "tmaze", "corridor_length": _TMAZE_CORRIDOR},
        "rollout": {"sample_actions_train": False, "sample_actions_val": False},
    },
    **{
        task: {
            "run": {"max_seq_len": length},
            "replay": {"traj_save_len": length},
            "schedule": {"val_timesteps_per_epoch": length},
        }
        for task, length in _TMAZE_EPISODE.items()
    },
}
"""Example 04 (T-Maze): argmax actions, reward x100, gamma 0.9999, one whole episode per sequence and file
(lengths and the quiet corridor for the default 10-cell corridor; raise them with ``corridor_length``).
Exploration is the ``tmaze`` plugin: epsilon-greedy annealed over 100k steps, except in the corridor."""

_LAKE_ROLLOUT = 25 * 10  # size² steps per attempt (5x5 lake) x k_episodes=10
FROZEN_LAKE_PRESETS: dict[str, dict[str, object]] = {
    "*": {
        "tstep_encoder": {
            "kind": "ff",
            "n_layers": 1,
            "d_hidden": 128,
            "d_output": 64,
            "normalize_inputs": False,
        },
        "traj_encoder": {"kind": "transformer", "d_model": 128, "d_ff": 512, "n_layers": 3},
        "agent": {"kind": "agent", "tau": 0.004},
        "exploration": {"kind": "egreedy", "eps_start": 1.0, "eps_end": 0.05, "steps_anneal": 1_000_000},
        "run": {"max_seq_len": _LAKE_ROLLOUT},
        "replay": {"traj_save_len": _LAKE_ROLLOUT, "dset_max_size": 12_500},
        "rollout": {"parallel_actors": 32, "env_mode": "sync"},
        # amago addition: attempts end early at holes and the goal, so meta-episodes run ~35-250 steps and a
        # random batch is mostly padding; sorting pools of 8 batches by length about halves the update's cost.
        "optim": {"length_group_batches": 8},
        "schedule": {
            "epochs": 700,
            "train_timesteps_per_epoch": _LAKE_ROLLOUT,
            "train_batches_per_epoch": 1000,
            "val_interval": 20,
            "val_timesteps_per_epoch": 2 * _LAKE_ROLLOUT,
            "ckpt_interval": 200,
        },
    }
}
"""Example 00 (Meta-Frozen-Lake): memory 128 x 3 layers, the whole k=10-attempt rollout (250 steps on the 5x5
lake) as one sequence and file, 32 actors, two val rollouts. Hard mode doubles the attempt length."""

_META_HORIZON = 500  # KeyDoorConfig.meta_rollout_horizon's default
KEY_DOOR_PRESETS: dict[str, dict[str, object]] = {
    "*": {
        "tstep_encoder": {"kind": "ff", "n_layers": 2, "d_hidden": 128, "d_output": 64},
        "agent": {"kind": "agent", "reward_multiplier": 100.0},
        "exploration": {"kind": "bilevel", "steps_anneal": 500_000, "rollout_horizon": _META_HORIZON},
        "run": {"max_seq_len": _META_HORIZON},
        "replay": {"traj_save_len": _META_HORIZON},
        "schedule": {"val_timesteps_per_epoch": 4 * _META_HORIZON},
    }
}
"""Example 05 (Dark Key-To-Door): bilevel exploration over the 500-step meta-rollout, which is also the
sequence and file length; reward x100."""


TMAZE = ComponentSpec(
    name="tmaze",
    group=ENV_SUITES_GROUP,
    summary="T-Maze long-term recall (passive, or active with an oracle detour); numpy only.",
    config=TMazeConfig,
    factory="amago_envs.suites.tmaze:TMazeSuite",
    tasks=list(TMAZE_TASKS),
    default_task="passive",
    presets=TMAZE_PRESETS,
)

FROZEN_LAKE = ComponentSpec(
    name="frozen_lake",
    group=ENV_SUITES_GROUP,
    summary="Meta-Frozen-Lake: k attempts per random lake, success logged per attempt; numpy only.",
    config=FrozenLakeConfig,
    factory="amago_envs.suites.frozen_lake:FrozenLakeSuite",
    presets=FROZEN_LAKE_PRESETS,
)

KEY_DOOR = ComponentSpec(
    name="key_door",
    group=ENV_SUITES_GROUP,
    summary="Dark Key-To-Door finite-horizon meta-RL (Algorithm Distillation's room); numpy only.",
    config=KeyDoorConfig,
    factory="amago_envs.suites.key_door:KeyDoorSuite",
    presets=KEY_DOOR_PRESETS,
)

_BANDIT_HORIZON = 8  # MaskedBanditConfig.horizon's default
MASKED_BANDIT_PRESETS: dict[str, dict[str, object]] = {
    "*": {
        "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 32, "d_output": 32},
        "traj_encoder": {"kind": "ff", "d_model": 32, "n_layers": 1},
        "exploration": {"kind": "egreedy", "eps_start": 1.0, "eps_end": 0.05, "steps_anneal": 2_000},
        "run": {"max_seq_len": _BANDIT_HORIZON},
        "replay": {"traj_save_len": _BANDIT_HORIZON},
        "rollout": {"parallel_actors": 8, "env_mode": "sync"},
        "optim": {"batch_size": 32},
        "schedule": {
            "epochs": 30,
            "train_timesteps_per_epoch": _BANDIT_HORIZON * 4,
            "train_batches_per_epoch": 30,
            "val_interval": 5,
            "val_timesteps_per_epoch": _BANDIT_HORIZON * 2,
            "ckpt_interval": None,
        },
    }
}
"""A memoryless few-minute run: the mask, not memory, is what the agent needs here."""

MASKED_BANDIT = ComponentSpec(
    name="masked_bandit",
    group=ENV_SUITES_GROUP,
    summary="Masked bandit: the best arm is illegal on odd steps; the action-mask demo; numpy only.",
    config=MaskedBanditConfig,
    factory="amago_envs.suites.masked_bandit:MaskedBanditSuite",
    presets=MASKED_BANDIT_PRESETS,
)

MAZERUNNER = ComponentSpec(
    name="mazerunner",
    group=ENV_SUITES_GROUP,
    summary="MazeRunner: k goals in order in a random maze, with observations for relabeling; numpy only.",
    config=MazeRunnerConfig,
    factory="amago_envs.suites.mazerunner:MazeRunnerSuite",
)

_LOCK_HORIZON = 10  # CombinationLockConfig.horizon's default
COMBINATION_LOCK_PRESETS: dict[str, dict[str, object]] = {
    "*": {
        "tstep_encoder": {"kind": "ff", "n_layers": 1, "d_hidden": 64, "d_output": 64},
        # The code is seen once, at the first step: a small GRU carries it to every later attempt.
        "traj_encoder": {"kind": "rnn", "d_hidden": 64, "n_layers": 1, "d_output": 64},
        # The same epsilon-greedy in both action formats (a random action: every dial at once), so that
        # MultiDiscrete and flattened Discrete runs compare like for like.
        "exploration": {"kind": "egreedy", "eps_start": 1.0, "eps_end": 0.05, "steps_anneal": 5_000},
        "run": {"max_seq_len": _LOCK_HORIZON},
        "replay": {"traj_save_len": _LOCK_HORIZON},
        "rollout": {"parallel_actors": 8, "env_mode": "sync"},
        "optim": {"batch_size": 32},
        "schedule": {
            "epochs": 40,
            "train_timesteps_per_epoch": _LOCK_HORIZON * 4,
            "train_batches_per_epoch": 40,
            "val_interval": 5,
            "val_timesteps_per_epoch": _LOCK_HORIZON * 2,
            "ckpt_interval": None,
        },
    }
}
"""A few-minute memory run: one whole episode (at most ``horizon`` attempts) per sequence and file, a small GRU
to remember the code, epsilon-greedy annealed over 5k steps per actor. The flattened baseline is
``-o env.action_format=discrete``."""

COMBINATION_LOCK = ComponentSpec(
    name="combination_lock",
    group=ENV_SUITES_GROUP,
    summary="Combination lock: recall a code shown once, set all dials at once (MultiDiscrete demo); numpy only.",
    config=CombinationLockConfig,
    factory="amago_envs.suites.combination_lock:CombinationLockSuite",
    presets=COMBINATION_LOCK_PRESETS,
)
