"""The suite's spec and config. gymnasium-free and numpy-free: ``amago list envs`` imports this file only."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.plugins.spec import ComponentSpec

TASK_DELAYS: dict[str, int] = {"short": 5, "medium": 25, "long": 100}
"""Blank steps between the cue and the question, per task."""


class CueRecallConfig(EnvSuiteConfig):
    """Cue Recall: see one of ``num_cues`` symbols, wait, then name it."""

    kind: Literal["cue_recall"] = "cue_recall"
    """Registered name of this env suite."""

    num_cues: int = Field(4, ge=2)
    """Symbols the cue is drawn from (and answers to choose between)."""

    delay: int | None = Field(None, ge=0)
    """Blank steps between cue and question; None uses the task's (short 5, medium 25, long 100)."""

    noise: float = Field(0.0, ge=0.0, le=1.0)
    """Chance that each blank step shows a random distractor symbol instead of nothing."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        if task is not None and task not in TASK_DELAYS:
            msg = f"cue_recall has no task {task!r}; tasks: {', '.join(TASK_DELAYS)} (env ids cue-recall-<task>)."
            raise ValueError(msg)
        return task


CUE_RECALL = ComponentSpec(
    name="cue_recall",
    group="amago.env_suites",
    summary="Cue Recall: name the symbol shown before a delay (example third-party env suite, numpy only).",
    config=CueRecallConfig,
    factory="amago_plugin_recall_envs.suite:CueRecallSuite",
    tasks=list(TASK_DELAYS),
    default_task="short",
    # A preset is the hyperparameters `amago run --env cue-recall-<task>` starts from: whole episodes fit
    # in one sequence and one trajectory file.
    presets={
        task: {
            "run": {"max_seq_len": delay + 2},
            "replay": {"traj_save_len": delay + 2},
            "schedule": {"val_timesteps_per_epoch": 4 * (delay + 2)},
        }
        for task, delay in TASK_DELAYS.items()
    },
)
