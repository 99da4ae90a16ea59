"""Spec and config of the ``babyai`` env suite (imports neither torch, gymnasium nor minigrid).

Env ids: ``babyai-multitask`` (default: a random level per episode, AMAGO-2's setup) or ``babyai-<Level>``
with a BabyAI level as minigrid names it (``babyai-GoToLocal``, ``babyai-KeyCorridorS3R1``), which keeps
the k-attempt protocol on that one level.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.config.presets import slot_with_alternative
from amago_core.plugins.spec import ComponentSpec
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task

BABYAI_LEVELS: tuple[str, ...] = (
    "GoToRedBallGrey", "GoToRedBall", "GoToRedBallNoDists", "GoToObj", "GoToObjS4", "GoToObjS6", "GoToLocal",
    "GoToLocalS5N2", "GoToLocalS6N2", "GoToLocalS6N3", "GoToLocalS6N4", "GoToLocalS7N4", "GoToLocalS7N5",
    "GoToLocalS8N2", "GoToLocalS8N3", "GoToLocalS8N4", "GoToLocalS8N5", "GoToLocalS8N6", "GoToLocalS8N7", "GoTo",
    "GoToOpen", "GoToObjMaze", "GoToObjMazeOpen", "GoToObjMazeS4R2", "GoToObjMazeS4", "GoToObjMazeS5",
    "GoToObjMazeS6", "GoToObjMazeS7", "GoToImpUnlock", "GoToSeq", "GoToSeqS5R2", "GoToRedBlueBall", "GoToDoor",
    "GoToObjDoor", "Open", "OpenRedDoor", "OpenDoor", "OpenDoorDebug", "OpenDoorColor", "OpenDoorLoc",
    "OpenTwoDoors", "OpenRedBlueDoors", "OpenRedBlueDoorsDebug", "OpenDoorsOrderN2", "OpenDoorsOrderN4",
    "OpenDoorsOrderN2Debug", "OpenDoorsOrderN4Debug", "Pickup", "UnblockPickup", "PickupLoc", "PickupDist",
    "PickupDistDebug", "PickupAbove", "PutNextLocal", "PutNextLocalS5N3", "PutNextLocalS6N4", "PutNextS4N1",
    "PutNextS5N2", "PutNextS5N1", "PutNextS6N3", "PutNextS7N4", "PutNextS5N2Carrying", "PutNextS6N3Carrying",
    "PutNextS7N4Carrying", "Unlock", "UnlockLocal", "UnlockLocalDist", "KeyInBox", "UnlockPickup",
    "UnlockPickupDist", "BlockedUnlockPickup", "UnlockToUnlock", "ActionObjDoor", "FindObjS5", "FindObjS6",
    "FindObjS7", "KeyCorridor", "KeyCorridorS3R1", "KeyCorridorS3R2", "KeyCorridorS3R3", "KeyCorridorS4R3",
    "KeyCorridorS5R3", "KeyCorridorS6R3", "OneRoomS8", "OneRoomS12", "OneRoomS16", "OneRoomS20",
    "MoveTwoAcrossS5N2", "MoveTwoAcrossS8N9", "Synth", "SynthS5R2", "SynthLoc", "SynthSeq", "MiniBossLevel",
    "BossLevel", "BossLevelNoUnlock",
)  # fmt: skip
"""Every BabyAI level minigrid 3.x registers (``BabyAI-<Level>-v0``; ``GoToObjS6`` is ``-v1``)."""

BANNED_FRAGMENTS: tuple[str, ...] = (
    "GoToSeq", "OpenRedBlueDoorsDebug", "OpenTwoDoors", "OpenDoorsOrderN4Debug", "OpenDoorsOrder",
    "PutNextLocal", "PutNext", "MiniBossLevel", "BossLevel", "BossLevelNoUnlock", "SynthSeq", "SynthLoc",
    "Synth", "MoveTwoAcross",
)  # fmt: skip
"""AMAGO keeps levels whose names contain one of these out of the multi-task mix (long, multi-part
missions that a 9-word mission encoding cuts short, or levels too hard for the k-attempt budget)."""

MULTITASK_LEVELS: tuple[str, ...] = tuple(
    level for level in BABYAI_LEVELS if not any(fragment in level for fragment in BANNED_FRAGMENTS)
)
"""Levels of the multi-task mix (val and test use all of them, train a seeded subset)."""

MULTITASK = "multitask"
BABYAI_TASKS: tuple[str, ...] = (MULTITASK, *BABYAI_LEVELS)

ObsKind = Literal["partial-grid", "full-grid", "partial-image", "full-image"]


class BabyAIConfig(EnvSuiteConfig):
    """BabyAI meta-RL: k attempts at one (level, layout); a new one is drawn at every reset."""

    kind: Literal["babyai"] = "babyai"
    """Registered name of this env suite."""

    obs_kind: ObsKind = "partial-grid"
    """``image`` key: the 7x7x3 agent-view grid encoding, the whole grid padded to ``full_grid_size``, the
    agent view as a 63x63 RGB image (tile size 9), or the whole map rendered and resized to 63x63."""

    k_episodes: int = Field(2, ge=1)
    """Attempts at the same level and layout before the env reports done."""

    train_seeds: int = Field(5000, ge=1)
    """Layouts ``[0, train_seeds)`` are for training; val and test draw from ``[train_seeds, 1e6)``."""

    train_levels: int | None = Field(50, ge=1)
    """``babyai-multitask``: how many levels (picked with ``level_pick_seed``) the train split mixes; None
    uses all of them. Val and test always mix every level of the multi-task set."""

    level_pick_seed: int = 0
    """Seed of the pick of training levels, so that runs (and their evaluations) agree on it."""

    mission_tokens: int = Field(9, ge=1)
    """Length of the ``mission`` key (word ids, 0 blank, 1 unknown word); longer missions are cut."""

    full_grid_size: int = Field(22, ge=7)
    """Side the ``full-grid`` encoding is zero-padded to (22 covers every BabyAI level)."""

    attempt_options: ClassVar[tuple[str, ...]] = ("k_episodes",)
    """The options ``amago eval --attempts K`` sets to K (attempts per trial, in every split)."""
    attempt_metrics: ClassVar[dict[str, str]] = {"success": "Episode {n} Success"}
    """Per-attempt metrics this suite logs, by name: info keys with ``{i}`` for the 0-based attempt (``{n}``:
    1-based), which ``amago eval --attempts`` reports attempt by attempt."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("babyai", task, BABYAI_TASKS)


# Example 10 (BabyAI): 2 attempts per layout, 5000 training layouts, a 512-step context over trajectories
# saved 3x that long, rewards x1000 (BabyAI pays at most 1 once per attempt), exploration annealed over 500k
# steps. The timestep encoder is example 10's, registered as ``babyai`` in amago-nets: a CNN over ``image``
# (gridworld CNN over the grid encoding, Nature CNN over the RGB obs kinds), an RNN over the ``mission`` word
# ids, an MLP over ``extra`` and the previous reward and action, then a 300-wide output.
_BABYAI_SEQ = 512
BABYAI_PRESETS: dict[str, Any] = {
    "*": {
        "run": {"max_seq_len": _BABYAI_SEQ},
        "replay": {"traj_save_len": 3 * _BABYAI_SEQ},
        "schedule": {"val_timesteps_per_epoch": 6000},
        "tstep_encoder": {"kind": "babyai", "d_output": 300},
        "agent": slot_with_alternative(
            "agent",
            {"reward_multiplier": 1000.0},
            alternative="multitask",
            alternative_options={"output_bins": 32},  # example 10's two-hot critic
        ),
        "exploration": {"kind": "egreedy", "steps_anneal": 500_000},
    },
}

BABYAI = ComponentSpec(
    name="babyai",
    group=ENV_SUITES_GROUP,
    summary="Multi-task BabyAI (minigrid): k attempts per random level and layout; per-attempt success.",
    config=BabyAIConfig,
    factory="amago_envs.suites.babyai.suite:BabyAISuite",
    requires=("minigrid", "cv2"),
    install_hint='pip install "amago-envs[babyai]"',
    tasks=list(BABYAI_TASKS),
    default_task=MULTITASK,
    presets=BABYAI_PRESETS,
)
